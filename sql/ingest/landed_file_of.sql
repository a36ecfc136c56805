-- Where the unit with this content hash landed (relative to the landing folder), if it did.
-- AM09 waived below: any one row will do, every row of a unit's hash that landed names the same landed file
select landed_path from raw.ingested_files
where content_sha256 = $sha and landed_path is not null limit 1  -- noqa: AM09
