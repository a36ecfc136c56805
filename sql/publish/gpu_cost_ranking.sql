-- Tonight's ranking: the newest night of the history, in the order it was written (by workload batch; not
-- sorted: readers order by rank_by_cost or rank_by_time), so the copy does not sort 10^7 wide rows.
create table published.gpu_cost_ranking as
with history as (
    select * from marts.gpu_cost_ranking_history
),

final as (
    select * from history
    where publish_date = (select max(publish_date) from history)
)

select * from final;
