insert into raw.ingested_files (
    dataset, content_sha256, source_file, provider, format, size_bytes, rows_read, rows_skipped,
    rows_loaded, rows_quarantined, status, skipped_by_reason, ingested_at, landed_path
)
values (
    $dataset, $sha, $source_file, $provider, $format, $size_bytes, $rows_read, $rows_skipped,
    $rows_loaded, $rows_quarantined, $status, $skipped_by_reason, $ingested_at, $landed_path
)
on conflict do nothing
