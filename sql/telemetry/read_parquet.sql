-- A telemetry Parquet file as typed (tasks/telemetry/readers.py::read_into_duckdb), in file order.
create or replace temp table staging_telemetry_file as
select * from read_parquet($path)
