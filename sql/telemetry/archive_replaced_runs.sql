-- Current records that a newer record of the same run replaces move to history
-- (`classified_runs` registered by tasks/telemetry/ingest.py).
insert into core.telemetry_run_history by name
select
    current_runs.*,
    $superseded_at as superseded_at,
    classified.content_sha256 as superseded_by_sha
from core.telemetry_runs as current_runs
inner join classified_runs as classified on current_runs.run_id = classified.run_id
where classified.action = 'newer'
