-- DuckDB's memory cap for this connection (e.g. '1500MB'); beyond it DuckDB spills to temp_directory.
set memory_limit = $memory_limit;
