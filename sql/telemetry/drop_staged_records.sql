-- What staging.file_rows was built from.
drop table if exists staging.run_duplicates;
drop table if exists staging.telemetry_records;
