-- The view made by stored_run_rows.sql, once the file's runs are stored.
drop view if exists temp.staging_stored_runs
