-- The records of an adapter that returns a frame (`adapter_records`, registered by tasks/prices/ingest.py).
create or replace temp table staging_file_records as
select * from adapter_records
