-- Every record of the file as read (staging_file_records), kept in raw.
insert into raw.telemetry_records (content_sha256, source_file, source_line, raw_values)
select $sha, $source_file, source_line, raw_values::json
from staging_file_records
