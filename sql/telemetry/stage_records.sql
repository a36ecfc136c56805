-- Every record of the telemetry file as read (`read_records` registered by tasks/telemetry/ingest.py).
create or replace table staging.file_records as
select _row_id, _source_line as source_line, _raw_values as raw_values
from read_records
