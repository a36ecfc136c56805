-- Tonight's ranking: the newest night of the history, best first.
create table published.gpu_cost_ranking as
with history as (
    select * from marts.gpu_cost_ranking_history
),

final as (
    select * from history
    where publish_date = (select max(publish_date) from history)
)

select * from final
order by workload, rank_by_cost nulls last, provider, region, instance_type, pricing;
