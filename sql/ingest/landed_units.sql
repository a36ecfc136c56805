-- Every landed file a dataset's registry rows name, with the unit it holds and one source it came from: what the
-- landing zone's check verifies before the dataset's ingest.
select
    landed_path,
    content_sha256,
    min(source_file) as source_file
from raw.ingested_files
where dataset = $dataset and landed_path is not null
group by landed_path, content_sha256
order by landed_path
