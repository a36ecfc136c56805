insert into raw.fetch_attempts (run_id, provider, status, detail, pages, files, bytes, seconds, fetched_at)
values ($run_id, $provider, $status, $detail, $pages, $files, $bytes, $seconds, $fetched_at);
