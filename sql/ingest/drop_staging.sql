-- The staged tables of the file just ingested (they live only inside its transaction).
drop table if exists staging_file_records;
drop table if exists staging_file_rows;
drop table if exists staging_suite_failures;
drop table if exists staging_suite_check_rows;
drop table if exists staging_part_check_rows;
drop table if exists staging_file_failures;
drop view if exists file_records;
drop view if exists skypilot_catalog;
drop view if exists skypilot_columns;
drop table if exists staging_price_file;
drop view if exists offer_lines;
drop view if exists offer_classified;
drop table if exists aws_gpu_shapes;
