-- The ranks, once every batch of offers of a batch of workloads is in ranking_keys: by cost among the offers'
-- cheapest choices, by time among their fastest, per workload. A rank depends only on the row's (expected total,
-- expected hours), so one row per distinct pair; insert_ranking.sql looks each row's rank up by its pair.
create or replace temp table ranking_key_ranks as
with keys as (
    select workload, cluster_choice, expected_total_usd, expected_hours from ranking_keys
),

ranked as (
    select
        workload,
        cluster_choice,
        expected_total_usd,
        expected_hours,
        case when cluster_choice = 'cheapest' then rank() over (
                    partition by workload, cluster_choice
                    order by expected_total_usd, expected_hours
                )
        end as rank_by_cost,
        case when cluster_choice = 'fastest' then rank() over (
                    partition by workload, cluster_choice
                    order by expected_hours, expected_total_usd
                )
        end as rank_by_time
    from keys
)

select distinct workload, cluster_choice, expected_total_usd, expected_hours, rank_by_cost, rank_by_time
from ranked;
