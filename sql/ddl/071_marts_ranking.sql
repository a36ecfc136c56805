-- Every night's ranking, kept (keyed by publish_date). Written by sql/marts/insert_ranking.sql; the
-- published gpu_cost_ranking is the newest night. Units in sql/publish/comments.csv.
create table if not exists marts.gpu_cost_ranking_history (
    publish_date date not null,      -- UTC date of the publish run
    published_at timestamptz not null,
    workload varchar not null,                -- config/workloads.toml name
    workload_type varchar,                    -- pretrain | sft | lora | qlora
    token_budget double,                      -- tokens
    deadline_hours double,                    -- h (null = none)
    max_gpus bigint,
    provider varchar not null,
    region varchar not null,
    zone varchar,
    instance_type varchar not null,
    pricing varchar not null,                 -- on_demand | spot (owned: on_demand)
    gpu varchar not null,
    gpus_per_instance double,
    usd_per_hour double,                      -- USD per instance-hour
    usd_per_gpu_hour double,                  -- USD per GPU-hour
    observed_at timestamptz,                  -- UTC, when the price was observed
    run_precision varchar,
    peak_tflops double,                       -- dense TFLOP/s per GPU at run_precision
    gpu_memory_gb double,                     -- GB per GPU (gpu_specs)
    tdp_w double,                             -- W per GPU (gpu_specs)
    model_state_gb double,                    -- GB, whole model (weights, grads, optimizer, adapters)
    activation_gb_per_gpu double,             -- GB per GPU
    min_gpus_for_memory bigint,
    fits_in_memory boolean,
    instances bigint,
    gpus double,
    memory_per_gpu_gb double,                 -- GB per GPU at this cluster size
    predicted_tokens_per_sec_per_gpu double,  -- tokens/s per GPU
    predicted_low double,                     -- tokens/s per GPU, 80% interval low
    predicted_high double,                    -- tokens/s per GPU, 80% interval high
    extrapolation varchar,                    -- what the prediction extrapolates ('' = none)
    hours_to_finish double,                   -- h without preemption
    compute_usd double,                       -- USD without preemption
    interruption_rate_per_hour double,        -- preemptions per instance-hour
    expected_interruptions double,
    lost_hours_per_interruption double,       -- h
    expected_hours double,                    -- h including preemption
    expected_compute_usd double,              -- USD including preemption
    utilisation_of_tdp double,                -- board power / TDP used for energy_kwh
    utilisation_of_tdp_source varchar,        -- measured (telemetry avg_power_w) or default (config)
    pue double,
    energy_kwh double,                        -- kWh
    electricity_usd_per_kwh double,           -- USD per kWh (owned only)
    energy_usd double,                        -- USD added to the cost (owned only)
    expected_total_usd double,             -- USD
    usd_per_mtoken double,                    -- USD per million tokens
    usd_per_mtoken_low double,                -- USD per million tokens at predicted_high
    usd_per_mtoken_high double,               -- USD per million tokens at predicted_low
    spot_usd_per_hour_median double,          -- USD per instance-hour over the window
    spot_usd_per_hour_p95 double,
    spot_history_observations bigint,
    rank_by_cost bigint,
    rank_by_time bigint,
    not_ranked_reason varchar,
    telemetry_runs_for_gpu bigint,
    model_version varchar,
    source_file varchar,
    source_line bigint,
    gpu_spec_source varchar
);

-- Warehouses created before utilisation_of_tdp_source existed get the column (null for their earlier nights).
alter table marts.gpu_cost_ranking_history add column if not exists utilisation_of_tdp_source varchar;

-- Commitments and checkpoint storage (formulas: sql/ddl/070_marts_cost_model.sql). `add column if not
-- exists` also upgrades warehouses created before these columns existed.
-- commitments: no_upfront | partial_upfront | all_upfront | term_total
alter table marts.gpu_cost_ranking_history add column if not exists purchase_option varchar;
-- AWS commitments: standard | convertible
alter table marts.gpu_cost_ranking_history add column if not exists offering_class varchar;
-- h per commitment term
alter table marts.gpu_cost_ranking_history add column if not exists term_hours double;
-- USD per instance, once per term
alter table marts.gpu_cost_ranking_history add column if not exists upfront_usd double;
-- USD per instance-hour of the term
alter table marts.gpu_cost_ranking_history add column if not exists recurring_usd_per_hour double;
-- share of the unused term recovered
alter table marts.gpu_cost_ranking_history add column if not exists resale_fraction double;
-- h per instance paid for
alter table marts.gpu_cost_ranking_history add column if not exists billed_term_hours double;
-- USD per instance-hour, same instance on demand
alter table marts.gpu_cost_ranking_history add column if not exists on_demand_usd_per_hour double;
-- h of use per instance
alter table marts.gpu_cost_ranking_history add column if not exists break_even_hours double;
alter table marts.gpu_cost_ranking_history add column if not exists commitment_note varchar;
alter table marts.gpu_cost_ranking_history add column if not exists checkpoints_kept bigint;
-- GB per checkpoint
alter table marts.gpu_cost_ranking_history add column if not exists checkpoint_gb double;
alter table marts.gpu_cost_ranking_history add column if not exists storage_usd_per_gb_month double; -- USD per GB-month
alter table marts.gpu_cost_ranking_history add column if not exists storage_price_source varchar;
alter table marts.gpu_cost_ranking_history add column if not exists checkpoint_storage_usd double;   -- USD

-- Rankings written before the model said what it extrapolates.
alter table marts.gpu_cost_ranking_history add column if not exists extrapolation varchar;

-- The cluster choice per offer and the machine the prediction assumed; carbon (units in sql/publish/comments.csv).
-- cheapest | fastest
alter table marts.gpu_cost_ranking_history add column if not exists cluster_choice varchar;
-- GPUs sharing NVLink/xGMI
alter table marts.gpu_cost_ranking_history add column if not exists scale_up_domain_gpus bigint;
alter table marts.gpu_cost_ranking_history add column if not exists scale_out_gbps_per_gpu double;  -- Gb/s per GPU
alter table marts.gpu_cost_ranking_history add column if not exists network_kind varchar;
alter table marts.gpu_cost_ranking_history add column if not exists machine_source varchar;
alter table marts.gpu_cost_ranking_history add column if not exists grid_gco2e_per_kwh double;      -- g CO2e per kWh
alter table marts.gpu_cost_ranking_history add column if not exists co2e_kg double;                 -- kg CO2e
-- kg CO2e per million tokens
alter table marts.gpu_cost_ranking_history add column if not exists co2e_kg_per_mtoken double;
alter table marts.gpu_cost_ranking_history add column if not exists co2e_source varchar;

-- The gpu_specs source of every GPU on the night it was ranked (one row per night and GPU, not per ranking row:
-- the text runs to hundreds of characters). Nights written before this table have their source in the
-- history's gpu_spec_source column; later nights leave that column null and the published ranking joins this.
create table if not exists marts.gpu_cost_ranking_gpu_specs (
    publish_date date not null,      -- UTC date of the publish run
    gpu varchar not null,    -- canonical GPU id (core.gpu_specs.gpu)
    gpu_spec_source varchar  -- data/reference/gpu_specs.csv source column that night
);
