-- The next chunk of normalised runs (`normalised_chunk`, registered by tasks/telemetry/ingest.py).
insert into staging.normalised_runs by name
select * from normalised_chunk
