-- Store floor, step 1 (telemetry CSV): the file read once into a temporary table, types sniffed.
create temp table floor_file as select * from read_csv($path)
