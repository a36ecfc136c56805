-- The file as read, once its records are in staging_telemetry_records.
drop view if exists telemetry_columns;
drop table if exists staging_telemetry_file;
