-- What staging_file_rows was built from (staging_file_records stays: the lifecycle stores it).
drop table if exists staging_run_duplicates;
