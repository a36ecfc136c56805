-- One run per (workload, GPU, cluster size, precision, machine) in the telemetry contract's normalised shape,
-- without throughput: the input of the champion model. The machine is the contract's scale_up_domain_gpus
-- (GPUs of the run sharing NVLink/xGMI) and scale_out_gbps_per_gpu (Gb/s per GPU between instances).
with rungs as (
    select distinct run_id, workload, gpu, gpus, run_precision, run_domain_gpus, scale_out_gbps_per_gpu
    from ranking_ladder
),

workloads as (
    select * from ranking_workloads
),

final as (
    select
        rungs.run_id,
        rungs.gpu,
        rungs.gpus::bigint as num_gpus,
        workloads.model_name,
        workloads.params_b,
        workloads.active_params_b,
        workloads.n_layers,
        workloads.d_model,
        workloads.moe_experts,
        workloads.moe_top_k,
        workloads.moe_expert_ffn,
        workloads.moe_shared_experts,
        workloads.seq_len,
        rungs.run_precision as precision,
        -- the recipe a run of that family uses by default: Transformer Engine delayed scaling, NVFP4
        case rungs.run_precision when 'fp8' then 'delayed' when 'fp4' then 'nv' else 'none' end
            as precision_recipe,
        workloads.workload_type as workload,
        workloads.micro_batch,
        workloads.global_batch_tokens,
        'full' as activation_checkpointing,
        workloads.optimizer,
        rungs.run_domain_gpus as scale_up_domain_gpus,
        rungs.scale_out_gbps_per_gpu
    from rungs
    inner join workloads using (workload)
)

select * from final order by run_id;
