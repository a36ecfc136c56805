-- What each accepted record (staging_file_rows without staging_file_failures: one row per run_id) does to
-- core.telemetry_runs, kept in DuckDB as the temporary table `classified_runs`
-- that the next statements read (no round trip through Python; dropped by drop_classified_runs.sql):
--   new       - no current record of the run
--   unchanged - the current record has the same values (record_hash): nothing to do
--   newer     - replaces the current record, which moves to history. Newer = later recorded_at; when
--               either record has no recorded_at (or they are equal), the later ingest (this one) wins.
--   older     - recorded before the current record: kept in history only
create or replace temporary table classified_runs as
with incoming as (
    select
        _row_id,
        run_id, gpu, gpu_name, num_gpus, model_name, params_b, active_params_b, n_layers, d_model,
        moe_experts,
        moe_top_k,
        moe_expert_ffn,
        moe_shared_experts,
        scale_up_domain_gpus,
        scale_out_gbps_per_gpu,
        seq_len,
        precision, precision_name, precision_recipe, workload, micro_batch, global_batch_tokens, parallelism,
        activation_checkpointing, framework, optimizer, learning_rate, avg_power_w, mfu_reported,
        tokens_processed, wall_seconds, tokens_per_sec_per_gpu, recorded_at, source, quality_flag, workload_name,
        record_hash, source_line,
        $source_file as source_file,
        $sha as content_sha256,
        $ingested_at::timestamptz as ingested_at   -- UTC
    from staging_file_rows
    anti join staging_file_failures using (_row_id)
),

current_runs as (
    select
        run_id, record_hash as current_hash, recorded_at as current_recorded_at,
        content_sha256 as current_sha
    from core.telemetry_runs
),

final as (
    select
        incoming.*,
        current_runs.current_sha,
        case
            when current_runs.run_id is null then 'new'
            when current_runs.current_hash = incoming.record_hash then 'unchanged'
            when incoming.recorded_at is not null and current_runs.current_recorded_at is not null
                and incoming.recorded_at < current_runs.current_recorded_at then 'older'
            else 'newer'
        end as action
    from incoming
    left join current_runs on incoming.run_id = current_runs.run_id
)

select * from final
