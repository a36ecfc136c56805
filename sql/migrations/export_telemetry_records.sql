-- Every unit's telemetry records (raw.telemetry_records) as JSON Lines, zstd, one folder per unit's content
-- hash under $folder, in line order (see export_price_records.sql).
copy (
    select content_sha256, source_line, raw_values
    from raw.telemetry_records
    order by content_sha256, source_line
) to $folder (format json, compression zstd, partition_by (content_sha256), overwrite_or_ignore)
