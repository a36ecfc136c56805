-- Floor for an AWS offer CSV ingest: DuckDB's own CSV reader (after the 5-line preamble) into a table.
create or replace table floor_load as
select * from read_csv($path, skip = 5)
