-- What each accepted record (staging_file_rows without staging_file_failures: one row per run_id) does to
-- core.telemetry_runs, kept in DuckDB as the temporary table `classified_runs` (the row key, run_id, action and the
-- current record's content hash: the record itself stays in staging_file_rows, which the next statements join by
-- row key rather than a second copy of every accepted run; dropped by drop_classified_runs.sql):
--   new       - no current record of the run
--   unchanged - the current record has the same values (record_hash): nothing to do
--   newer     - replaces the current record, which moves to history. Newer = later recorded_at; when
--               either record has no recorded_at (or they are equal), the later ingest (this one) wins.
--   older     - recorded before the current record: kept in history only
create or replace temporary table classified_runs as
with incoming as (
    select _row_id, run_id, record_hash, recorded_at
    from staging_file_rows
    anti join staging_file_failures using (_row_id)
),

current_runs as (
    select
        run_id, record_hash as current_hash, recorded_at as current_recorded_at,
        content_sha256 as current_sha
    from core.telemetry_runs
),

final as (
    select
        incoming._row_id,
        incoming.run_id,
        current_runs.current_sha,
        case
            when current_runs.run_id is null then 'new'
            when current_runs.current_hash = incoming.record_hash then 'unchanged'
            when incoming.recorded_at is not null and current_runs.current_recorded_at is not null
                and incoming.recorded_at < current_runs.current_recorded_at then 'older'
            else 'newer'
        end as action
    from incoming
    left join current_runs on incoming.run_id = current_runs.run_id
)

select * from final
