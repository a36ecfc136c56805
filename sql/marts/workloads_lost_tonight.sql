-- Workloads that had ranked offers on the latest earlier night but have none tonight ($publish_date):
-- a night that silently stops answering for a workload must say so loudly. A workload removed from
-- config/workloads.toml has no rows tonight at all and is not reported (that was deliberate).
with earlier as (
    select max(publish_date) as night
    from marts.gpu_cost_ranking_history
    where publish_date < $publish_date
),

ranked_by_night as (
    select h.publish_date, h.workload, count(*) filter (where h.rank_by_cost is not null) as ranked_offers
    from marts.gpu_cost_ranking_history as h
    where h.publish_date = $publish_date or h.publish_date = (select night from earlier)
    group by all
),

yesterday as (
    select workload, ranked_offers from ranked_by_night
    where publish_date = (select night from earlier) and ranked_offers > 0
),

tonight as (
    select workload, ranked_offers from ranked_by_night where publish_date = $publish_date
),

final as (
    select
        y.workload, (select night from earlier) as earlier_night, y.ranked_offers as earlier_ranked_offers,
        t.ranked_offers as ranked_offers_tonight
    from yesterday as y inner join tonight as t using (workload)
    where t.ranked_offers = 0
)

select * from final
order by workload;
