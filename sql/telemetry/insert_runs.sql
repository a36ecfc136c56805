-- New runs and newer records of known runs become the current record: the staged rows classified so
-- (classified_runs, sql/telemetry/classify_runs.sql), with the file's identity ($source_file, $sha, $ingested_at).
insert into core.telemetry_runs by name
with classified as (
    select _row_id from classified_runs where action in ('new', 'newer')
)

select
    staging_stored_runs.* exclude (_row_id),
    $source_file as source_file, $sha as content_sha256, $ingested_at::timestamptz as ingested_at
from staging_stored_runs
semi join classified using (_row_id)
