-- Store floor (telemetry), step 2: one raw record (the record as JSON) per run.
insert into floor_raw
select 'sha', $path, rowid + 1, null, null, to_json(floor_file)
from floor_file
