select 1 from raw.ingested_files where dataset = $dataset and content_sha256 = $sha
