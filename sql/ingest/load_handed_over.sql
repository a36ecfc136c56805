-- The staged tables a worker handed over as Parquet (tasks/ingest/lifecycle.py HANDED_OVER; the views
-- `handed_over_<name>` read them), as the writer's own staging tables.
create or replace temp table staging_file_records as select * from handed_over_file_records;
create or replace temp table staging_file_rows as select * from handed_over_file_rows;
create or replace temp table staging_suite_check_rows as select * from handed_over_suite_check_rows;
drop view handed_over_file_records;
drop view handed_over_file_rows;
drop view handed_over_suite_check_rows;
