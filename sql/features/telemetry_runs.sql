-- The current runs, as the feature SQL's input (tasks/contract/features.py::refresh_feature_table).
select * from core.telemetry_runs order by run_id
