-- One MLflow run read (tasks/telemetry/mlflow_ingest.py).
insert into raw.mlflow_runs (
    tracking_uri, experiment_id, experiment_name, run_id, end_time, content_sha256, mapping,
    throughput_points, power_samples, problem, read_at
)
values (
    $tracking_uri, $experiment_id, $experiment_name, $run_id, $end_time, $sha, $mapping,
    $throughput_points, $power_samples, $problem, $read_at
)
