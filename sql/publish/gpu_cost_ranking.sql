-- Tonight's ranking: the newest night of the published history, as a view (the rows are stored once, in
-- gpu_cost_ranking_history; a copy of 10^6 wide rows cost as much as ranking them). Not sorted: readers order by
-- rank_by_cost or rank_by_time. The view's query names tables of its own database only, so it reads the same
-- however the file is opened or attached. No CTE over the history: one named twice is materialised whole (the
-- Parquet copy of 2 x 10^6 rows took 3x as long).
create view published.gpu_cost_ranking as
with final as (
    select * from published.gpu_cost_ranking_history
    where publish_date = (select max(newest.publish_date) from published.gpu_cost_ranking_history as newest)
)

select * from final;
