-- A unit landed again under another name (its source's suffix differs from the first one's): its rows name it.
update raw.ingested_files set landed_path = $landed_path
where content_sha256 = $sha and landed_path = $previous
