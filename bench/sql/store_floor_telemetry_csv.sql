-- Store floor (telemetry CSV): the typed runs, one per record, as DuckDB's CSV reader types them (sniffed), with
-- lineage (the landed file's sha256, the 1-based line, header = 1), written in one pass over the file. No contract
-- vocabulary, no record hash, no duplicate or replaced runs, no quarantine, no checks.
create table floor_runs as
select
    *,
    $path as source_file,
    row_number() over () + 1 as source_line,
    $sha256 as content_sha256,
    $ingested_at as ingested_at
from read_csv($path)
