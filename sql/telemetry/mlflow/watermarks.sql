-- Where the next incremental read of each experiment starts: the newest end_time read from this tracking
-- server, in ms since the epoch, minus the look-back (clock skew between trainers and the server).
with runs as (
    select * from raw.mlflow_runs
    where tracking_uri = $tracking_uri
),

final as (
    select
        experiment_id,
        epoch_ms(max(end_time)) - $lookback_minutes::bigint * 60000 as ended_after_ms
    from runs
    group by experiment_id
)

select * from final order by experiment_id
