-- The file of the connection's current database (null or no row: an in-memory database).
select path from duckdb_databases() where database_name = current_database() and path is not null
