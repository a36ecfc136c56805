-- Floor for the ranking: ONE create-table-as-select of the same arithmetic over the same inputs
-- (every workload x every current offer, memory fit, hours, preemption, dollars per million tokens, rank),
-- with the marts.* macros of sql/ddl/070_marts_cost_model.sql. Throughput is a fixed MFU of 0.4 of the
-- physics bound (no model call, no cluster-size ladder, no deadline search): the least a ranking costs.
-- `ranking_workloads` is registered by bench/ranking.py (the same frame the pipeline ranks).
create or replace table floor_ranking as
with joined as (
    select
        ranking_workloads.* exclude (providers, regions),
        offers.provider, offers.region, offers.zone, offers.instance_type, offers.pricing, offers.gpu,
        offers.gpu_count as gpus_per_instance, offers.usd_per_hour, offers.usd_per_gpu_hour, offers.observed_at,
        offers.source_file, offers.source_line, offers.term_hours,
        specs.memory_gb as gpu_memory_gb, specs.tdp_w, specs.source as gpu_spec_source,
        dense_peak_tflops(ranking_workloads.precision, specs.fp16_dense_tflops, specs.bf16_dense_tflops,
            specs.fp8_dense_tflops, specs.fp4_dense_tflops) as peak_tflops
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
        0.4 * peak_tflops * 1e12 / (6.0 * active_params_b * 1e9) as tokens_per_sec_per_gpu
    from joined
),

fitted as (
    select
        *,
        marts.min_gpus_for_memory(state_bytes, act_bytes, gpu_memory_gb, usable_fraction) as min_gpus_for_memory
    from sized
),

costed as (
    select
        *,
        ceil(min_gpus_for_memory / gpus_per_instance)::bigint as instances,
        ceil(min_gpus_for_memory / gpus_per_instance) * gpus_per_instance as gpus,
        case when pricing = 'spot' then 0.02 else 0.0 end as interruption_rate_per_hour
    from fitted
),

final as (
    select
        *,
        marts.hours_to_finish(token_budget, tokens_per_sec_per_gpu, gpus) as hours_to_finish,
        marts.expected_total_usd(token_budget, tokens_per_sec_per_gpu, gpus, instances, usd_per_hour,
            interruption_rate_per_hour, marts.lost_hours_per_interruption(30, 10), tdp_w, 0.9, 1.2, 0.0,
            term_hours, 0.0, 0, 0.0, 0.0) as expected_total_usd,
        marts.usd_per_mtoken(marts.expected_total_usd(token_budget, tokens_per_sec_per_gpu, gpus, instances,
            usd_per_hour, interruption_rate_per_hour, marts.lost_hours_per_interruption(30, 10), tdp_w, 0.9, 1.2,
            0.0, term_hours, 0.0, 0, 0.0, 0.0), token_budget) as usd_per_mtoken
    from costed
)

select
    *,
    rank() over (partition by workload order by usd_per_mtoken) as rank_by_cost,
    rank() over (partition by workload order by hours_to_finish) as rank_by_time
from final
