-- Incoming records older than the run's current record go straight to history (the staged rows classified
-- 'older', sql/telemetry/classify_runs.sql, with the file's identity $source_file, $sha, $ingested_at).
insert into core.telemetry_run_history by name
with older as (
    select _row_id as older_row_id, current_sha from classified_runs where action = 'older'
)

select
    staging_stored_runs.* exclude (_row_id),
    $source_file as source_file, $sha as content_sha256, $ingested_at::timestamptz as ingested_at,
    $superseded_at as superseded_at,
    current_sha as superseded_by_sha
from staging_stored_runs
inner join older on staging_stored_runs._row_id = older.older_row_id
