-- Store floor (telemetry Parquet): the typed runs, one per record, types as stored, with lineage (the landed
-- file's sha256, the 1-based record number), written in one pass over the file. No contract vocabulary, no record
-- hash, no duplicate or replaced runs, no quarantine, no checks.
create table floor_runs as
select
    * exclude (file_row_number),
    $path as source_file,
    file_row_number + 1 as source_line,
    $sha256 as content_sha256,
    $ingested_at as ingested_at
from read_parquet($path, file_row_number = true)
