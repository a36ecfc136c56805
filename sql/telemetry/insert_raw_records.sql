-- `read_records` is registered by tasks/telemetry/ingest.py: every record of the file as read.
insert into raw.telemetry_records (content_sha256, source_file, source_line, raw_values)
select $sha, $source_file, _source_line, _raw_values::json
from read_records
