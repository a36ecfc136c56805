-- The file's records for normalisation: row key, line and the contract's cells, without the raw JSON
-- (tasks/telemetry/ingest.py streams this query in chunks; no order needed: each record carries its key and line).
select * exclude (raw_values)
from staging_file_records
