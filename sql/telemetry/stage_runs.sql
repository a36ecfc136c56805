-- The staged telemetry rows the suite validates: each normalised run (staging_normalised_runs,
-- sql/contract/normalised_runs.sql) with the GPU's peak for the precision and the checked columns, stored once
-- (sql/telemetry/duplicate_runs.sql then drops the identical extra duplicates and names the conflicting ones).
-- Formulas: sql/contract/flops_macros.sql.
create or replace temp table staging_file_rows as
with runs as (
    select
        *,
        null::varchar as rejected_reason  -- a conflicting duplicate's reason (sql/telemetry/duplicate_runs.sql)
    from staging_normalised_runs
),

specs as (
    select * from core.gpu_specs
),

peaks as (
    select
        runs.*,
        specs.gpu is not null as gpu_has_specs,
        dense_peak_tflops(
            runs.precision, specs.fp16_dense_tflops, specs.bf16_dense_tflops,
            specs.fp8_dense_tflops, specs.fp4_dense_tflops
        ) as peak_tflops                                         -- dense TFLOP/s per GPU, run's precision
    from runs
    left join specs on runs.gpu = specs.gpu
),

final as (
    select
        peaks.* exclude (peaks.gpu_has_specs),
        case when peaks.gpu is null then peaks.gpu_name end as unknown_gpu,
        case when peaks.gpu is not null and not peaks.gpu_has_specs then peaks.gpu end as gpu_without_specs,
        case when peaks.precision is null then peaks.precision_name end as unknown_precision,
        case when peaks.workload is null then peaks.workload_name end as unknown_workload,
        case when peaks.gpu_has_specs and peaks.precision is not null and peaks.peak_tflops is null
                then peaks.precision
        end as precision_without_peak,
        peaks.active_params_b / peaks.params_b as active_params_share,
        -- routed experts per token over routed experts (above 1 impossible; null without both, or no expert)
        case when peaks.moe_experts > 0 then peaks.moe_top_k::double / peaks.moe_experts end as moe_top_k_share,
        -- implied model FLOP/s per GPU (parameter term only) over the dense peak: > 1 is impossible, below
        -- min_implied_peak_ratio implausible; null for a throughput that is not positive (its own check says so)
        case when peaks.tokens_per_sec_per_gpu > 0
                then parameter_flops_per_token(peaks.workload, peaks.active_params_b) * peaks.tokens_per_sec_per_gpu
                    / (peaks.peak_tflops * 1e12)
        end as implied_peak_ratio,
        epoch(peaks.recorded_at - $ingested_at::timestamptz) / 3600.0 as recorded_hours_ahead  -- hours after the ingest
    from peaks
)

select * from final
