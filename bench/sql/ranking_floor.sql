-- Floor for the ranking with its cluster ladder: ONE create-table-as-select of the same arithmetic over the same
-- inputs: every workload x every current offer, memory fit, the same rungs per offer (whole instances: the
-- memory minimum, 2^k and 3 x 2^k, the most within max_gpus), hours, preemption and dollars at every rung, the
-- cheapest rung and the fastest per offer (two rows per offer), dollars per million tokens, ranks; with the
-- marts.* macros of sql/ddl/070_marts_cost_model.sql. Throughput is a fixed MFU of 0.4 of the physics bound
-- (no model call, no machine table, no predictions join): the least a ranking with a ladder costs. Like the
-- pipeline's stored rows, no gpu_specs source text per row (the published ranking joins it from one row per GPU).
-- `ranking_workloads` is registered by bench/ranking.py (the same frame the pipeline ranks).
create or replace table floor_ranking as
with joined as (
    select
        ranking_workloads.* exclude (providers, regions),
        offers.provider, offers.region, offers.zone, offers.instance_type, offers.pricing, offers.gpu,
        offers.gpu_count as gpus_per_instance, offers.usd_per_hour, offers.usd_per_gpu_hour, offers.observed_at,
        offers.source_file, offers.source_line, offers.term_hours,
        specs.memory_gb as gpu_memory_gb, specs.tdp_w,
        dense_peak_tflops(ranking_workloads.precision, specs.fp16_dense_tflops, specs.bf16_dense_tflops,
            specs.fp8_dense_tflops, specs.fp4_dense_tflops) as peak_tflops,
        row_number() over () as candidate_id
    from ranking_workloads
    cross join core.prices_current as offers
    left join core.gpu_specs as specs on offers.gpu = specs.gpu
),

sized as (
    select
        *,
        marts.model_state_bytes(workload_type, params_b, weight_bytes, grad_bytes, master_weight_bytes,
            optimizer_bytes, adapter_params_fraction, qlora_weight_bytes, lora_weight_bytes) as state_bytes,
        marts.activation_bytes(seq_len, micro_batch, d_model, n_layers) as act_bytes,
        0.4 * peak_tflops * 1e12 / (6.0 * active_params_b * 1e9) as tokens_per_sec_per_gpu,
        case when pricing = 'spot' then 0.02 else 0.0 end as interruption_rate_per_hour
    from joined
),

fitted as (
    select
        *,
        ceil(marts.min_gpus_for_memory(state_bytes, act_bytes, gpu_memory_gb, usable_fraction)
            / gpus_per_instance)::bigint as min_instances,
        floor(max_gpus / gpus_per_instance)::bigint as max_instances
    from sized
),

counts as (
    select (2 ** k)::bigint as instances from (select unnest(generate_series(0, 30)) as k)
    union
    select (3 * 2 ** k)::bigint from (select unnest(generate_series(0, 30)) as k)
),

rungs as (
    select candidate_id, counts.instances
    from fitted join counts on counts.instances > fitted.min_instances and counts.instances < fitted.max_instances
    union all
    select candidate_id, min_instances from fitted where min_instances <= max_instances
    union all
    select candidate_id, max_instances from fitted where max_instances > min_instances
),

evaluated as (
    select
        rungs.candidate_id,
        rungs.instances,
        marts.expected_hours(marts.hours_to_finish(token_budget, tokens_per_sec_per_gpu, rungs.instances
            * gpus_per_instance), rungs.instances, interruption_rate_per_hour,
            marts.lost_hours_per_interruption(30, 10)) as expected_hours,
        marts.expected_total_usd(token_budget, tokens_per_sec_per_gpu, rungs.instances * gpus_per_instance,
            rungs.instances, usd_per_hour, interruption_rate_per_hour, marts.lost_hours_per_interruption(30, 10),
            tdp_w, 0.9, 1.2, 0.0, term_hours, 0.0, 0, 0.0, 0.0) as expected_total_usd
    from rungs
    join fitted using (candidate_id)
),

picked as (
    select
        candidate_id,
        arg_min(instances, {usd: round(expected_total_usd, 2), instances: instances}) as cheapest_instances,
        arg_min(instances, {seconds: round(expected_hours * 3600), instances: instances}) as fastest_instances
    from evaluated
    group by candidate_id
),

chosen as (
    select
        fitted.*,
        choice.cluster_choice,
        case choice.cluster_choice when 'cheapest' then picked.cheapest_instances
                                   else picked.fastest_instances end as instances
    from fitted
    cross join (values ('cheapest'), ('fastest')) as choice(cluster_choice)
    left join picked using (candidate_id)
),

final as (
    select
        *,
        instances * gpus_per_instance as gpus,
        marts.hours_to_finish(token_budget, tokens_per_sec_per_gpu, instances * gpus_per_instance) as hours_to_finish,
        marts.expected_total_usd(token_budget, tokens_per_sec_per_gpu, instances * gpus_per_instance, instances,
            usd_per_hour, interruption_rate_per_hour, marts.lost_hours_per_interruption(30, 10), tdp_w, 0.9, 1.2,
            0.0, term_hours, 0.0, 0, 0.0, 0.0) as expected_total_usd,
        marts.energy_kwh(instances * gpus_per_instance, tdp_w, 0.9, marts.hours_to_finish(token_budget,
            tokens_per_sec_per_gpu, instances * gpus_per_instance), 1.2) as energy_kwh
    from chosen
)

select
    *,
    marts.usd_per_mtoken(expected_total_usd, token_budget) as usd_per_mtoken,
    case when cluster_choice = 'cheapest' then
        rank() over (partition by workload, cluster_choice order by expected_total_usd) end as rank_by_cost,
    case when cluster_choice = 'fastest' then
        rank() over (partition by workload, cluster_choice order by hours_to_finish) end as rank_by_time
from final
