-- What staging_file_rows was built from.
drop table if exists staging_run_duplicates;
drop table if exists staging_telemetry_records;
