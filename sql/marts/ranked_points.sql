-- Every ranked offer of one night (its cheapest choice): dollars per million tokens against hours to finish
-- (the chart).
select workload, provider, instance_type, pricing, gpu, expected_hours, usd_per_mtoken
from marts.gpu_cost_ranking_history
where publish_date = $publish_date and not_ranked_reason is null and cluster_choice = 'cheapest'
    and usd_per_mtoken is not null and expected_hours is not null
order by workload, expected_hours, usd_per_mtoken;
