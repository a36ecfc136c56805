-- `gpucost offers`: tonight's ranked offers, filtered, best first, at most $limit per workload.
-- Every filter is optional (null = no filter); gpu matches any part of the name, case-insensitively
-- ("H100" finds H100-SXM and H100-PCIe); provider and region match whole names, case-insensitively.
with ranked as (
    select * from gpu_cost_ranking
    where not_ranked_reason is null
),

filtered as (
    select * from ranked
    where ($workload is null or workload = $workload)
      and ($gpu is null or contains(lower(gpu), lower($gpu)))
      and ($provider is null or lower(provider) = lower($provider))
      and ($region is null or lower(region) = lower($region))
      and ($pricing is null or pricing = $pricing)
      and ($max_hours is null or expected_hours <= $max_hours)
      and ($max_usd is null or expected_total_usd <= $max_usd)
),

numbered as (
    select
        *,
        row_number() over (
            partition by workload
            order by
                case when $sort_by = 'time' then rank_by_time else rank_by_cost end,
                provider, region, instance_type, pricing
        ) as position_in_workload
    from filtered
),

final as (
    select
        workload,
        rank_by_cost,
        rank_by_time,
        provider,
        region,
        zone,
        instance_type,
        pricing,
        gpu,
        instances,
        gpus::bigint                 as gpus,
        predicted_tokens_per_sec_per_gpu,  -- tokens/s per GPU
        expected_hours,              -- h including preemption
        expected_total_usd,          -- USD
        usd_per_mtoken,              -- USD per million tokens
        usd_per_mtoken_low,          -- USD per million tokens, 80% interval
        usd_per_mtoken_high,
        telemetry_runs_for_gpu,      -- telemetry runs behind this GPU's prediction
        model_version,
        position_in_workload
    from numbered
    where position_in_workload <= $limit
)

select * from final
order by workload, position_in_workload;
