-- The temporary table made by classify_runs.sql, once the file's runs are stored.
drop table if exists temp.classified_runs
