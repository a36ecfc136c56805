-- Cluster sizes to predict for each rankable candidate shape, in whole instances: the fewest that fit in
-- memory, every 2^k and 3 x 2^k in between (neighbouring rungs at most 1.5x apart), and the most whole
-- instances within the workload's max_gpus. The insert picks per offer the cheapest rung that meets the
-- deadline and the fastest (sql/marts/insert_ranking.sql).
-- A shape (offer_candidates.sql shape_id: workload, GPU, precision, GPUs per instance, fewest instances, and the
-- machine: scale-up domain and network per GPU) is the same for every offer of it, so the ladder is built once
-- per shape, not once per offer. run_id names what the throughput model is asked about: (workload, GPU,
-- cluster size, precision, scale-up domain, network).
create or replace temp table ranking_ladder as
with shapes as (
    select distinct
        shape_id, workload, gpu, run_precision, gpus_per_instance, min_instances, max_gpus,
        scale_up_domain_gpus, scale_out_gbps_per_gpu
    from ranking_candidates
    where pre_reason is null
),

bounded as (
    select *, floor(max_gpus / gpus_per_instance)::bigint as max_instances from shapes
),

steps as (
    select unnest(generate_series(0, 30)) as k
),

counts as (
    select (2 ** k)::bigint as instances from steps
    union
    select (3 * 2 ** k)::bigint from steps
),

rungs as (
    select bounded.*, counts.instances
    from bounded
    inner join counts on bounded.min_instances < counts.instances and bounded.max_instances > counts.instances
    union
    select bounded.*, min_instances from bounded
    union
    select bounded.*, max_instances from bounded
),

final as (
    select
        shape_id,
        workload,
        gpu,
        run_precision,
        gpus_per_instance,
        scale_up_domain_gpus,
        scale_out_gbps_per_gpu,
        instances,
        instances * gpus_per_instance as gpus,
        marts.run_scale_up_domain_gpus(scale_up_domain_gpus, instances * gpus_per_instance) as run_domain_gpus,
        concat_ws(
            '|', workload, gpu, (instances * gpus_per_instance)::bigint, run_precision,
            marts.run_scale_up_domain_gpus(scale_up_domain_gpus, instances * gpus_per_instance),
            round(scale_out_gbps_per_gpu, 3)
        ) as run_id
    from rungs
)

select * from final;
