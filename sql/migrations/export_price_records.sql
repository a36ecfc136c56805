-- Every unit's price records (raw.price_records) as JSON Lines, zstd, one folder per unit's content hash under
-- $folder (content_sha256=<hash>/data_*.json.zst), each record once, in line order: what the landed file of a
-- unit ingested before the landing zone holds.
copy (
    select content_sha256, source_line, provider, format, raw_values
    from raw.price_records
    order by content_sha256, source_line
) to $folder (format json, compression zstd, partition_by (content_sha256), overwrite_or_ignore)
