-- Store floor, CSV files: the file read once, in file order, into a temporary table (types sniffed). DuckDB's CSV
-- reader gives no row number: the table's rowid, in file order, is the line. (A window `row_number() over ()`
-- over the reader in the insert itself runs on one thread: 3.0-3.7 s against 2.0-2.6 s this way for a 10^6-line
-- SkyPilot catalog.)
create temp table floor_file as
select * from read_csv($path)
