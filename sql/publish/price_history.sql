-- Every dated price observation; spot rows carry the spread of that offer's spot price over the
-- $window_days days up to and including the observation (config/ranking.toml [spot] history_window_days).
create table published.price_history as
with observations as (
    select * from core.price_observations
),

spread as (
    select
        *,
        case when pricing = 'spot' then median(usd_per_hour) over spot_window end as spot_usd_per_hour_median,
        case when pricing = 'spot' then quantile_cont(usd_per_hour, 0.95) over spot_window end as spot_usd_per_hour_p95,
        case when pricing = 'spot' then count(*) over spot_window end as spot_window_observations
    from observations
    window spot_window as (
        partition by
            provider, region, coalesce(zone, ''), instance_type, pricing,
            coalesce(purchase_option, ''), coalesce(offering_class, '')
        order by observed_at
        -- PRS waived below: sqlfluff's DuckDB grammar takes only a literal offset in a RANGE frame, not an expression
        range between to_days($window_days::integer) preceding and current row  -- noqa: PRS
    )
),

final as (
    select * from spread
)

select * from final
order by provider, region, zone, instance_type, pricing, purchase_option, offering_class, observed_at;
