-- True when the staged relation $name (staging_file_records, staging_file_rows) is a view (a reader that computes
-- the records where they are read; rows whose warehouse-dependent columns are joined where they are read) rather
-- than a table; DuckDB drops each kind only by its own name.
select count(*) > 0 as is_view
from duckdb_views()
where temporary and view_name = $name
