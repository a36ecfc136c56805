-- Every night's ranking, kept in the warehouse (marts.gpu_cost_ranking_history) and copied whole.
create table published.gpu_cost_ranking_history as
with final as (
    select * from marts.gpu_cost_ranking_history
)

select * from final
order by publish_date, workload, rank_by_cost nulls last, provider, region, instance_type, pricing;
