-- The fast read's records (a view over the file as read), when the file goes to the general reader after all.
drop view if exists staging_file_records;
drop view if exists telemetry_columns;
drop table if exists staging_telemetry_file;
