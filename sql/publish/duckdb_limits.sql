-- The connection's current DuckDB memory cap and spill folder (restored after a publish).
select current_setting('memory_limit') as memory_limit, current_setting('temp_directory') as temp_directory;
