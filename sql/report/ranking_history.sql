-- The report page: per stored night, workload and GPU in $gpus, the lowest dollars per million tokens of its
-- ranked offers (their cheapest clusters).
select
    publish_date,
    workload,
    gpu,
    min(usd_per_mtoken) as best_usd_per_mtoken,
    count(*) as ranked_offers
from gpu_cost_ranking_history
where not_ranked_reason is null and cluster_choice = 'cheapest' and list_contains($gpus, gpu)
group by all
order by workload, gpu, publish_date;
