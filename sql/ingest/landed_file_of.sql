-- Where the unit with this content hash landed (relative to the landing folder), if it did.
select landed_path from raw.ingested_files where content_sha256 = $sha and landed_path is not null limit 1
