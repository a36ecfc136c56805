-- The night's gpu_specs sources, one row per GPU (published beside each ranking row by
-- sql/publish/gpu_cost_ranking_history.sql).
insert into marts.gpu_cost_ranking_gpu_specs
with specs as (
    select gpu, source from core.gpu_specs
),

final as (
    select
        $publish_date::date as publish_date,
        gpu,
        source as gpu_spec_source
    from specs
)

select * from final;
