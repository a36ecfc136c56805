-- `raw_prices` is registered by tasks.prices.ingest: every record as read (source_line, provider,
-- raw_values), kept in raw; the file's identity is bound once rather than repeated in every row.
insert into raw.price_records (content_sha256, source_file, source_line, provider, format, raw_values)
select $content_sha256, $source_file, source_line, provider, $format, raw_values::json
from raw_prices
