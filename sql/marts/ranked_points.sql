-- The ranked offers of one night (their cheapest choice) the chart draws: dollars per million tokens against hours
-- to finish. Every point of a workload's Pareto front (no point before it in (hours, dollars) order is as cheap),
-- and of the points behind it one per cell of the chart's log-log grid (10^-3 of a decade on both axes,
-- tasks/publishing/artifacts.py CLOUD_LOG10_RESOLUTION): the first in (hours, dollars) order, the one the chart
-- keeps of that cell. The chart of these points is the chart of all of them; at 10^6 offers they are a few
-- thousand rows, not millions held in Python.
with points as (
    select workload, provider, instance_type, pricing, gpu, expected_hours, usd_per_mtoken
    from marts.gpu_cost_ranking_history
    where publish_date = $publish_date and not_ranked_reason is null and cluster_choice = 'cheapest'
        and usd_per_mtoken is not null and expected_hours is not null
),

flagged as (
    select
        *,
        usd_per_mtoken < coalesce(min(usd_per_mtoken) over (
            partition by workload order by expected_hours, usd_per_mtoken
            rows between unbounded preceding and 1 preceding
        ), 'infinity'::double) as on_pareto_front,
        round(log10(expected_hours) / $cell_log10) as hours_cell,
        round(log10(usd_per_mtoken) / $cell_log10) as usd_cell
    from points
),

cloud as (
    select
        arg_min(
            {
                workload: workload,
                provider: provider,
                instance_type: instance_type,
                pricing: pricing,
                gpu: gpu,
                expected_hours: expected_hours,
                usd_per_mtoken: usd_per_mtoken
            },
            { hours: expected_hours, usd: usd_per_mtoken }
        ) as point
    from flagged
    where not on_pareto_front
    group by workload, hours_cell, usd_cell
),

final as (
    select workload, provider, instance_type, pricing, gpu, expected_hours, usd_per_mtoken
    from flagged
    where on_pareto_front
    union all
    select point.* from cloud
)

select * from final
order by workload, expected_hours, usd_per_mtoken;
