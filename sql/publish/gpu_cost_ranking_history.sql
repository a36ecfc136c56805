-- Every night's ranking, kept in the warehouse (marts.gpu_cost_ranking_history) and copied whole, in the
-- order it was written (sql/marts/insert_ranking.sql): sorting the whole history
-- again every night would cost more each night. Query it with `order by publish_date`.
-- gpu_spec_source: the night's source of the GPU's spec row (marts.gpu_cost_ranking_gpu_specs), or, for nights
-- written before that table, the one stored in the row.
create table published.gpu_cost_ranking_history as
with history as (
    select * from marts.gpu_cost_ranking_history
),

spec_sources as (
    select publish_date, gpu, gpu_spec_source from marts.gpu_cost_ranking_gpu_specs
),

final as (
    select history.* replace (coalesce(history.gpu_spec_source, spec_sources.gpu_spec_source) as gpu_spec_source)
    from history
    left join spec_sources
        on history.publish_date = spec_sources.publish_date and history.gpu = spec_sources.gpu
)

select * from final;
