-- A unit ingested before the landing zone: its registry rows name the file its records were written to.
update raw.ingested_files set landed_path = $landed_path
where content_sha256 = $sha and dataset = $dataset and landed_path is null
