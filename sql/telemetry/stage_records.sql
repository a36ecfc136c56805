-- Every record of the telemetry file as read (the lifecycle's staging.file_records).
create or replace table staging.file_records as
select _row_id, _source_line as source_line, _raw_values as raw_values
from staging.telemetry_records
