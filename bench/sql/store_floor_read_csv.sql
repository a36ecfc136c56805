-- Store floor, step 1: the file read once into a temporary table (every column as text, as the ingest reads it).
create temp table floor_file as select * from read_csv($path, all_varchar = true)
