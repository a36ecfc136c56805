-- Floor for a Parquet ingest: DuckDB's own Parquet reader into a table of the same file.
create or replace table floor_load as
select * from read_parquet($path)
