-- Content hashes of the files of one dataset already registered (a parallel ingest does not stage them again).
select distinct content_sha256 from raw.ingested_files where dataset = $dataset
