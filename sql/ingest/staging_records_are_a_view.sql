-- True when the file's staging_file_records is a view (a reader that computes the records where they are read)
-- rather than a table; DuckDB drops each kind only by its own name.
select count(*) > 0 as is_view
from duckdb_views()
where temporary and view_name = 'staging_file_records'
