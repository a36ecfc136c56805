-- Flush everything into the file (no WAL left beside it) before it is moved into place.
checkpoint published;
-- PRS waived below: sqlfluff's DuckDB grammar has no DETACH statement
detach published;  -- noqa: PRS
