insert into raw.downloads
(
    run_id, provider, url, http_status, outcome, etag, last_modified, content_type, size_bytes,
    content_sha256, path, watermark, fetched_at, downloaded_at
)
values
(
    $run_id, $provider, $url, $http_status, $outcome, $etag, $last_modified, $content_type, $size_bytes,
    $content_sha256, $path, $watermark, $fetched_at, $downloaded_at
);
