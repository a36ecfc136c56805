-- `gpucost offers`: tonight's ranked offers, filtered, best first, at most $limit per workload.
-- Every filter is optional (null = no filter); gpu matches any part of the name, case-insensitively
-- ("H100" finds H100-SXM and H100-PCIe); provider and region match whole names, case-insensitively.
-- $sort_by: cost and co2 read each offer's cheapest cluster (cluster_choice), time its fastest; co2 orders by
-- co2e_kg (offers without a grid intensity last).
with ranked as (
    select * from gpu_cost_ranking
    where not_ranked_reason is null
        and cluster_choice = case when $sort_by = 'time' then 'fastest' else 'cheapest' end
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
        and ($max_co2_kg is null or co2e_kg <= $max_co2_kg)
),

numbered as (
    select
        *,
        row_number() over (
            partition by workload
            order by
                case $sort_by when 'time' then rank_by_time when 'cost' then rank_by_cost end,
                case when $sort_by = 'co2' then co2e_kg end nulls last,
                expected_total_usd, provider, region, instance_type, pricing
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
        cluster_choice,
        instances,
        gpus::bigint as gpus,
        scale_up_domain_gpus,    -- GPUs sharing NVLink/xGMI
        scale_out_gbps_per_gpu,  -- Gb/s per GPU between instances
        network_kind,
        predicted_tokens_per_sec_per_gpu,  -- tokens/s per GPU
        expected_hours,          -- h including preemption
        expected_total_usd,      -- USD
        usd_per_mtoken,          -- USD per million tokens
        usd_per_mtoken_low,      -- USD per million tokens, 80% interval
        usd_per_mtoken_high,
        energy_kwh,              -- kWh
        co2e_kg,                 -- kg CO2e (operational; null = no grid intensity for the region)
        co2e_kg_per_mtoken,
        co2e_source,
        telemetry_runs_for_gpu,  -- telemetry runs behind this GPU's prediction
        model_version,
        position_in_workload,
        -- the report page's (tasks/report/), not printed by `gpucost offers` (tasks/ranking/offers.py)
        purchase_option,         -- commitments: how the term is paid
        offering_class,
        extrapolation            -- what the throughput prediction extrapolates (e.g. unseen_gpu)
    from numbered
    where position_in_workload <= $limit
)

select * from final
order by workload, position_in_workload;
