-- Store floor (telemetry CSV): the typed runs, one per record, as DuckDB's CSV reader types them (sniffed), with
-- lineage (the landed file's sha256, the 1-based line, header = 1), from the file as read
-- (bench/sql/store_floor_read_csv.sql, rowid = place in the file). No contract vocabulary, no record hash, no
-- duplicate or replaced runs, no quarantine, no checks.
create table floor_runs as
select
    * exclude (first_rowid),
    $path as source_file,
    rowid - first_rowid + 2 as source_line,
    $sha256 as content_sha256,
    $ingested_at as ingested_at
from floor_file
cross join (select min(rowid) as first_rowid from floor_file) as first_record
