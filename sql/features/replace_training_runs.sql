-- `training_run_features` is registered by tasks/contract/features.py: build_features over core.telemetry_runs.
create or replace table features.training_runs as
select * from training_run_features
