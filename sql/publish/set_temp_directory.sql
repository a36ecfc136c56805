-- Where DuckDB spills what does not fit under memory_limit.
set temp_directory = $temp_directory;
