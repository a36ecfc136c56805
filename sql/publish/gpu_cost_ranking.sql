-- Tonight's ranking: the newest night of the history, best first. A night's rows are written in one
-- statement already in that order (sql/marts/insert_ranking.sql) and DuckDB keeps insertion order
-- (preserve_insertion_order, on by default), so the copy does not sort 10^7 wide rows again.
create table published.gpu_cost_ranking as
with history as (
    select * from marts.gpu_cost_ranking_history
),

final as (
    select * from history
    where publish_date = (select max(publish_date) from history)
)

select * from final;
