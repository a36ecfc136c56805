-- The normalisation's views, once staging_file_rows holds the staged rows (sql/telemetry/stage_runs.sql).
drop view staging_normalised_runs;
drop view telemetry_cells;
