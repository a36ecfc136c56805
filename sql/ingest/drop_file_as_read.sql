-- The file as read and the views over it, once the rejected rows' records are kept apart
-- (sql/ingest/keep_rejected_records.sql) and staging_file_records is dropped: nothing that stores the file's rows
-- reads them (the staged rows are tables of their own). The same names as in sql/ingest/drop_staging.sql.
drop view if exists file_records;
drop view if exists skypilot_catalog;
drop view if exists skypilot_columns;
drop table if exists staging_price_file;
drop view if exists offer_classified;
drop view if exists offer_lines;
drop view if exists telemetry_columns;
drop table if exists staging_telemetry_file;
