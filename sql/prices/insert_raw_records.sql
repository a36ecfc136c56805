-- Every record as read (staging_file_records, one per adapter record), kept in raw; the file's identity is
-- bound once rather than repeated in every row.
insert into raw.price_records (content_sha256, source_file, source_line, provider, format, raw_values)
select $content_sha256, $source_file, source_line, provider, $format, raw_values::json
from staging_file_records
