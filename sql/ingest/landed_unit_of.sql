-- The landed file of the unit with this content hash, and one source it came from (no row: nothing of it landed).
select
    landed_path,
    min(source_file) as source_file
from raw.ingested_files
where content_sha256 = $sha and landed_path is not null
group by landed_path
order by landed_path
limit 1
