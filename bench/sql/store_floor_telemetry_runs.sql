-- Store floor (telemetry), step 3: the typed runs, one per record (no normalisation, no checks, no history).
create table floor_runs as
select *, $path as source_file, rowid + 1 as source_line, 'sha' as content_sha256, now() as ingested_at
from floor_file
