-- Floor for a file ingest: DuckDB's own CSV reader into a table of the same file (types sniffed).
create or replace table floor_load as
select * from read_csv($path)
