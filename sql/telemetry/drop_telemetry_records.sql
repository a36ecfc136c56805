-- The fast read's records, when the file goes to the general reader after all.
drop table if exists staging_telemetry_records;
