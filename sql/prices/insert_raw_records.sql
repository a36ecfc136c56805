-- `staged_prices` is registered by tasks.prices.ingest: every record as read, kept in raw.
insert into raw.price_records (content_sha256, source_file, source_line, provider, format, raw_values)
select content_sha256, source_file, source_line, provider, $format, raw_values::json
from staged_prices
