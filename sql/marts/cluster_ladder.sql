-- Cluster sizes to predict for each rankable candidate shape: the fewest instances that fit in memory,
-- then every power of two above it, up to the workload's max_gpus (the deadline picks among them).
-- The ladder depends only on the shape (workload, GPU, precision, GPUs per instance, fewest instances),
-- never on the offer's price or place, so it is built once per shape, not once per offer.
-- run_id names the (workload, GPU, cluster size, precision) the throughput model is asked about.
create or replace temp table ranking_ladder as
with shapes as (
    select distinct workload, gpu, run_precision, gpus_per_instance, min_instances, max_gpus
    from ranking_candidates
    where pre_reason is null
),

powers as (
    select unnest(generate_series(0, 20)) as k
),

rungs as (
    select distinct
        workload,
        gpu,
        run_precision,
        gpus_per_instance,
        min_instances,
        greatest(min_instances, (2 ** k)::bigint) as instances
    from shapes
    cross join powers
    where greatest(min_instances, (2 ** k)::bigint) * gpus_per_instance <= max_gpus
),

final as (
    select
        *,
        instances * gpus_per_instance as gpus,
        concat_ws('|', workload, gpu, (instances * gpus_per_instance)::bigint, run_precision) as run_id
    from rungs
)

select * from final;
