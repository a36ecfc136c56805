-- Cluster sizes to predict for each rankable candidate: the fewest instances that fit in memory,
-- then every power of two above it, up to the workload's max_gpus (the deadline picks among them).
-- run_id names the (workload, GPU, cluster size, precision) the throughput model is asked about.
create or replace temp table ranking_ladder as
with rankable as (
    select * from ranking_candidates where pre_reason is null
),

powers as (
    select unnest(generate_series(0, 20)) as k
),

rungs as (
    select distinct
        workload,
        provider,
        region,
        coalesce(zone, '') as zone_key,
        instance_type,
        pricing,
        gpu,
        run_precision,
        gpus_per_instance,
        greatest(min_instances, (2 ** k)::bigint) as instances
    from rankable
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
