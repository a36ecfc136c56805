-- Every landed file a registry row names (relative to the landing folder).
select distinct landed_path from raw.ingested_files where landed_path is not null
