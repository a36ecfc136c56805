-- Every record as read (staging.file_records, one per adapter record), kept in raw; the file's identity is
-- bound once rather than repeated in every row.
insert into raw.price_records (content_sha256, source_file, source_line, provider, format, raw_values)
select $content_sha256, $source_file, source_line, provider, $format, raw_values::json
from staging.file_records
order by _row_id
