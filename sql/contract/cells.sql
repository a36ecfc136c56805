-- The contract's cells of the telemetry records (staging_file_records), every contract column present (null where
-- the records have none: `telemetry_contract_columns`, an empty table of them registered by
-- tasks/contract/normalise.py, read by name beside the records): text cells trimmed, the others as read (a plain
-- number or timestamp has nothing to trim; any other cell is looked up as read, trimmed by the look-up). A view: read
-- by the spellings query and the normalisation (sql/contract/normalised_runs.sql).
create or replace temp view telemetry_cells as
with records as (
    select * from telemetry_contract_columns
    union all by name
    select * exclude (raw_values) from staging_file_records
),

final as (
    select
        _row_id,
        source_line,
        telemetry_text(run_id) as run_id,
        telemetry_text(gpu) as gpu,
        num_gpus,
        params_b,
        active_params_b,
        seq_len,
        precision,
        tokens_per_sec_per_gpu,
        tokens_processed,
        wall_seconds,
        recorded_at,
        telemetry_text(model_name) as model_name,
        micro_batch,
        global_batch_tokens,
        workload,
        telemetry_text(parallelism) as parallelism,
        activation_checkpointing,
        telemetry_text(framework) as framework,
        telemetry_text(optimizer) as optimizer,
        learning_rate,
        avg_power_w,
        mfu,
        n_layers,
        d_model,
        moe_experts,
        moe_top_k,
        moe_expert_ffn,
        moe_shared_experts,
        scale_up_domain_gpus,
        scale_out_gbps_per_gpu,
        telemetry_text(source) as source,
        telemetry_text(quality_flag) as quality_flag
    from records
)

select * from final
