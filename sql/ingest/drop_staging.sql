-- The staged tables and views of the file just ingested (they live only inside its transaction);
-- staging_file_records itself is dropped first, as the table or view it is (tasks/ingest/lifecycle.py).
drop table if exists staging_file_rows;
drop table if exists staging_suite_failures;
drop table if exists staging_suite_check_rows;
drop table if exists staging_part_check_rows;
drop table if exists staging_file_failures;
drop view if exists file_records;
drop table if exists skypilot_provider;
drop view if exists skypilot_catalog;
drop view if exists skypilot_columns;
drop table if exists staging_price_file;
drop view if exists offer_lines;
drop view if exists offer_classified;
drop table if exists aws_gpu_shapes;
drop view if exists telemetry_columns;
drop table if exists staging_telemetry_file;
