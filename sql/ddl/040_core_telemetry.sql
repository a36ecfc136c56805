-- Training runs, one current row per run_id, in the telemetry contract's vocabulary (normalised by
-- tasks/contract/normalise.py, validated by expectations/telemetry.json). One row per run_id is the ingest's
-- rule (sql/telemetry/classify_runs.sql, one transaction per file), not a primary key: the key's index made
-- storing 10^6 runs 1.8 s slower and held every run_id in memory (warehouses made with the key lose it in
-- tasks/warehouse.py::migrate).
create table if not exists core.telemetry_runs (
    run_id varchar not null,
    gpu varchar not null,                    -- canonical GPU id (data/reference/gpu_aliases.csv)
    gpu_name varchar,                        -- the GPU as the source spelled it
    num_gpus bigint not null,
    model_name varchar,
    params_b double not null,                -- total parameters, billions
    active_params_b double not null,         -- parameters active per token, billions (MoE); default params_b
    n_layers bigint,                         -- model shape, when the record gives it
    d_model bigint,
    moe_experts bigint,                      -- routed experts per MoE layer, when the record gives them
    moe_top_k bigint,                        -- experts per token
    moe_expert_ffn bigint,                   -- FFN (intermediate) size of one expert
    moe_shared_experts bigint,               -- always-on experts per MoE layer
    scale_up_domain_gpus bigint,             -- GPUs sharing NVLink / xGMI, when the record gives it
    scale_out_gbps_per_gpu double,           -- network per GPU beyond that domain, Gb/s
    seq_len bigint not null,                 -- tokens
    precision varchar not null,              -- family (the matmuls' peak): fp32 | tf32 | fp16 | bf16 | fp8 | fp4
    precision_name varchar,                  -- the precision as the source spelled it
    precision_recipe varchar,                -- none | delayed | current | tensorwise | rowwise | blockwise | mx | nv
    workload varchar not null,               -- pretrain | sft | lora | qlora
    micro_batch bigint,                      -- sequences per GPU per micro-step
    global_batch_tokens bigint,              -- tokens per optimizer step, all GPUs
    parallelism varchar,
    activation_checkpointing varchar,        -- none | selective | full
    framework varchar,
    optimizer varchar,
    learning_rate double,
    avg_power_w double,                      -- W per GPU
    mfu_reported double,                     -- the source's own MFU (its definition; not recomputed)
    tokens_processed double,                 -- tokens, all GPUs (when the record gives throughput this way)
    wall_seconds double,                     -- s
    tokens_per_sec_per_gpu double not null,  -- tokens/s per GPU (given, or tokens_processed / wall_seconds / num_gpus)
    recorded_at timestamptz,                 -- UTC, when the source recorded the measurement
    source varchar,                          -- where the number comes from, "repository:path@commit"
    quality_flag varchar,                    -- the source's own doubt about the row (flagged runs are not trained on)
    workload_name varchar,                   -- the workload as the source spelled it
    record_hash varchar not null,            -- SHA-256 of the normalised values: same hash = same record
    source_file varchar not null,
    source_line bigint,                      -- 1-based line (CSV, JSON Lines) or record (Parquet)
    content_sha256 varchar not null,
    ingested_at timestamptz not null -- UTC
);

-- Every record of a run that a newer record replaced (or that arrived older than the current one).
create table if not exists core.telemetry_run_history (
    run_id varchar not null,
    gpu varchar,
    gpu_name varchar,
    num_gpus bigint,
    model_name varchar,
    params_b double,
    active_params_b double,
    n_layers bigint,
    d_model bigint,
    moe_experts bigint,
    moe_top_k bigint,
    moe_expert_ffn bigint,
    moe_shared_experts bigint,
    scale_up_domain_gpus bigint,
    scale_out_gbps_per_gpu double,
    seq_len bigint,
    precision varchar,
    precision_name varchar,
    precision_recipe varchar,
    workload varchar,
    micro_batch bigint,
    global_batch_tokens bigint,
    parallelism varchar,
    activation_checkpointing varchar,
    framework varchar,
    optimizer varchar,
    learning_rate double,
    avg_power_w double,
    mfu_reported double,
    tokens_processed double,
    wall_seconds double,
    tokens_per_sec_per_gpu double,
    recorded_at timestamptz,
    source varchar,
    quality_flag varchar,
    workload_name varchar,
    record_hash varchar,
    source_file varchar,
    source_line bigint,
    content_sha256 varchar,
    ingested_at timestamptz,   -- UTC, when this (now superseded) record was ingested
    superseded_at timestamptz not null, -- UTC, when a newer record replaced it
    superseded_by_sha varchar  -- content_sha256 of the file holding the current record
);

-- Warehouses created before the precision family/recipe and checkpointing vocabulary: new columns, and
-- activation_checkpointing from boolean to its category (true -> full, false -> none; idempotent).
alter table core.telemetry_runs add column if not exists precision_recipe varchar;
alter table core.telemetry_runs add column if not exists quality_flag varchar;
alter table core.telemetry_run_history add column if not exists precision_recipe varchar;
alter table core.telemetry_run_history add column if not exists quality_flag varchar;
-- Warehouses created before the MoE shape and machine columns.
alter table core.telemetry_runs add column if not exists moe_experts bigint;
alter table core.telemetry_runs add column if not exists moe_top_k bigint;
alter table core.telemetry_runs add column if not exists moe_expert_ffn bigint;
alter table core.telemetry_runs add column if not exists moe_shared_experts bigint;
alter table core.telemetry_runs add column if not exists scale_up_domain_gpus bigint;
alter table core.telemetry_runs add column if not exists scale_out_gbps_per_gpu double;
alter table core.telemetry_run_history add column if not exists moe_experts bigint;
alter table core.telemetry_run_history add column if not exists moe_top_k bigint;
alter table core.telemetry_run_history add column if not exists moe_expert_ffn bigint;
alter table core.telemetry_run_history add column if not exists moe_shared_experts bigint;
alter table core.telemetry_run_history add column if not exists scale_up_domain_gpus bigint;
alter table core.telemetry_run_history add column if not exists scale_out_gbps_per_gpu double;
alter table core.telemetry_runs alter activation_checkpointing type varchar using
case activation_checkpointing::varchar when 'true' then 'full' when 'false' then 'none'
    else activation_checkpointing::varchar
end;
alter table core.telemetry_run_history alter activation_checkpointing type varchar using
case activation_checkpointing::varchar when 'true' then 'full' when 'false' then 'none'
    else activation_checkpointing::varchar
end;
