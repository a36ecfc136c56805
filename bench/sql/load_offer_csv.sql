-- Floor for the AWS offer CSV: DuckDB's CSV reader into a table, past the 5-line preamble, every column text.
create or replace table floor_load as
select * from read_csv($path, skip = 5, header = true, all_varchar = true)
