insert into quarantine.rejected_files (dataset, source_file, content_sha256, error, quarantined_at)
values ($dataset, $source_file, $sha, $error, $quarantined_at)
