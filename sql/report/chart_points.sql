-- The report page's chart: every ranked offer of tonight (its cheapest cluster), dollars per million tokens with
-- the 80% interval against hours to finish, and what names the offer.
select
    workload, provider, region, zone, instance_type, pricing, gpu, gpus::bigint as gpus, instances,
    expected_hours, usd_per_mtoken, usd_per_mtoken_low, usd_per_mtoken_high
from gpu_cost_ranking
where not_ranked_reason is null and cluster_choice = 'cheapest'
    and usd_per_mtoken is not null and expected_hours is not null
order by workload, expected_hours, usd_per_mtoken, provider, region, zone, instance_type, pricing;
