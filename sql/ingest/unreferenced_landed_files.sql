-- Landed files no current row refers to (no core or quarantine row carries their unit's hash), ingested before
-- $before: what retention removes. A landed file any such row refers to is never among them.
with landed as (
    select landed_path, content_sha256, ingested_at from raw.ingested_files where landed_path is not null
),

referenced as (
    select content_sha256 from core.price_observations
    union
    select content_sha256 from core.storage_price_observations
    union
    select content_sha256 from core.telemetry_runs
    union
    select content_sha256 from core.telemetry_run_history
    union
    select content_sha256 from quarantine.rejected_rows where content_sha256 is not null
    union
    select content_sha256 from quarantine.rejected_files where content_sha256 is not null
),

final as (
    select distinct landed.landed_path
    from landed
    anti join referenced using (content_sha256)
    -- one landed file can serve several registry rows (the same bytes under two datasets): kept while any does
    where landed.ingested_at < $before and landed.landed_path not in (
            select l.landed_path from landed as l semi join referenced as r on l.content_sha256 = r.content_sha256
        )
)

select * from final order by landed_path
