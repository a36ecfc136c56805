-- Every record of the telemetry file as read (the lifecycle's staging_file_records).
create or replace temp table staging_file_records as
select _row_id, _source_line as source_line, _raw_values as raw_values
from staging_telemetry_records
