-- The best offers of one night per workload, for the run summary and the Prefect table artifact.
select
    workload, rank_by_cost, provider, region, instance_type, pricing, gpu, instances, gpus::bigint as gpus,
    round(predicted_tokens_per_sec_per_gpu, 0) as tokens_per_sec_per_gpu,
    round(expected_hours, 1) as expected_hours,
    round(expected_total_usd, 0) as expected_total_usd,
    round(usd_per_mtoken, 4) as usd_per_mtoken,
    round(usd_per_mtoken_low, 4) as usd_per_mtoken_low,
    round(usd_per_mtoken_high, 4) as usd_per_mtoken_high,
    telemetry_runs_for_gpu                     -- telemetry runs behind this GPU's prediction (0: extrapolated)
from marts.gpu_cost_ranking_history
where publish_date = $publish_date and rank_by_cost <= $top
order by workload, rank_by_cost, provider, region, instance_type;
