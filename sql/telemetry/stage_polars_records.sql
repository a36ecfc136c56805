-- Records read by the general readers (`read_records`, registered by tasks/telemetry/ingest.py) as the
-- lifecycle's staging_file_records: row key, line, the record as JSON and the contract's cells.
create or replace temp table staging_file_records as
select
    _row_id,
    _source_line as source_line,
    _raw_values as raw_values,
    * exclude (_row_id, _source_line, _raw_values)
from read_records
