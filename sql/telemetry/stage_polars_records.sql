-- Records read by the general readers (`read_records`, registered by tasks/telemetry/ingest.py).
create or replace temp table staging_telemetry_records as
select * from read_records
