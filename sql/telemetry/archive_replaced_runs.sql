-- Current records that a newer record of the same run replaces move to history
-- (`classified_runs`, sql/telemetry/classify_runs.sql).
insert into core.telemetry_run_history by name
select
    current_runs.*,
    $superseded_at as superseded_at,
    $sha as superseded_by_sha  -- the file being ingested
from core.telemetry_runs as current_runs
inner join classified_runs as classified on current_runs.run_id = classified.run_id
where classified.action = 'newer'
