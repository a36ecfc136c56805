-- The contract columns of the staged runs, as core.telemetry_runs and core.telemetry_run_history store them
-- (staging_file_rows also holds the checked columns): one list for insert_runs.sql and archive_older_records.sql,
-- which add the file's identity. A view: no second copy of the rows. Dropped by drop_stored_run_rows.sql.
create or replace temp view staging_stored_runs as
select
    _row_id,
    run_id, gpu, gpu_name, num_gpus, model_name, params_b, active_params_b, n_layers, d_model,
    moe_experts, moe_top_k, moe_expert_ffn, moe_shared_experts, scale_up_domain_gpus, scale_out_gbps_per_gpu, seq_len,
    precision, precision_name, precision_recipe, workload, micro_batch, global_batch_tokens, parallelism,
    activation_checkpointing, framework, optimizer, learning_rate, avg_power_w, mfu_reported, tokens_processed,
    wall_seconds, tokens_per_sec_per_gpu, recorded_at, source, quality_flag, workload_name, record_hash,
    source_line
from staging_file_rows;
