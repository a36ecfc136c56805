-- Every night's ranking, kept in the warehouse (marts.gpu_cost_ranking_history) and copied whole, in the
-- order it was written (sql/marts/insert_ranking.sql): sorting the whole history
-- again every night would cost more each night. Query it with `order by publish_date`.
create table published.gpu_cost_ranking_history as
with final as (
    select * from marts.gpu_cost_ranking_history
)

select * from final;
