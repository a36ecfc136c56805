-- One chunk of the file's records, by row key (tasks/telemetry/ingest.py normalises the file in chunks).
select * exclude (_raw_values)
from staging_telemetry_records
where _row_id >= $first and _row_id < $last
order by _row_id
