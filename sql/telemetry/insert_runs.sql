-- New runs and newer records of known runs become the current record: the staged rows classified so
-- (classified_runs, sql/telemetry/classify_runs.sql), with the file's identity ($source_file, $sha, $ingested_at).
insert into core.telemetry_runs by name
with classified as (
    select _row_id from classified_runs where action in ('new', 'newer')
)

select
    run_id, gpu, gpu_name, num_gpus, model_name, params_b, active_params_b, n_layers, d_model,
    moe_experts, moe_top_k, moe_expert_ffn, moe_shared_experts, scale_up_domain_gpus, scale_out_gbps_per_gpu, seq_len,
    precision,
    precision_name,
    precision_recipe,
    workload,
    micro_batch,
    global_batch_tokens,
    parallelism,
    activation_checkpointing,
    framework, optimizer, learning_rate, avg_power_w, mfu_reported, tokens_processed, wall_seconds,
    tokens_per_sec_per_gpu, recorded_at, source, quality_flag, workload_name, record_hash,
    $source_file as source_file, source_line, $sha as content_sha256, $ingested_at::timestamptz as ingested_at
from staging_file_rows
semi join classified using (_row_id)
