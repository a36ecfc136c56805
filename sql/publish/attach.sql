-- The published database is written in DuckDB 1.5's storage format so that the PyPI `duckdb-cli` (1.5.x)
-- opens it too (DuckDB 2.0 would otherwise write a format 1.5 cannot read).
-- PRS waived below: sqlfluff's DuckDB grammar has no ATTACH statement (nothing else in sql/ attaches)
attach $path as published (storage_version 'v1.5.0');  -- noqa: PRS
