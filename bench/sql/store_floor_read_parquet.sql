-- Store floor, step 1 (telemetry Parquet): the file read once into a temporary table, types as stored.
create temp table floor_file as select * from read_parquet($path)
