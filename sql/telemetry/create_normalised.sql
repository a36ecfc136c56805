-- The first chunk of normalised runs (`normalised_chunk`, registered by tasks/telemetry/ingest.py).
create or replace table staging.normalised_runs as
select * from normalised_chunk
