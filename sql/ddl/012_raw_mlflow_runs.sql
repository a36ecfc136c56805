-- Every MLflow run the telemetry ingest has read (tasks/telemetry/mlflow_ingest.py), keyed by the run and the
-- fingerprint of what it said when read: the newest end_time per tracking server and experiment is where the
-- next incremental read starts (minus config/mlflow_telemetry.toml lookback_minutes).
create table if not exists raw.mlflow_runs (
    tracking_uri varchar not null,    -- without user:password
    experiment_id varchar not null,
    experiment_name varchar,
    run_id varchar not null,          -- MLflow run id (also the telemetry run_id)
    end_time timestamptz not null, -- UTC, when the run finished
    content_sha256 varchar not null,  -- fingerprint: ids, end time, params, tags, latest metrics, mapping
    mapping varchar not null,         -- config/mlflow_telemetry.toml mapping that read it
    throughput_points bigint,         -- metric-history points behind the median tokens/s per GPU
    power_samples bigint,             -- GPU power samples behind avg_power_w (null: no power metrics)
    problem varchar,                  -- why the run was quarantined (null: read into the telemetry)
    read_at timestamptz not null      -- UTC
);
