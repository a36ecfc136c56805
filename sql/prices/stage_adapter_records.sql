-- The records of an adapter that returns a frame (`adapter_records`, registered by tasks/prices/ingest.py).
create or replace table staging.file_records as
select * from adapter_records
