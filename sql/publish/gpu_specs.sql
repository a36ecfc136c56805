-- The GPU reference table the ranking used (data/reference/gpu_specs.csv).
create table published.gpu_specs as
with final as (
    select * from core.gpu_specs
)

select * from final order by gpu;
