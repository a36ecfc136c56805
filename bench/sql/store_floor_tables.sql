-- The store floor's tables: what a file ingest must keep, with the warehouse's column types (raw records as
-- JSON, as raw.price_records / raw.telemetry_records; typed rows in a core-like table made by the load).
create table floor_raw (
    content_sha256 varchar, source_file varchar, source_line bigint, provider varchar, format varchar,
    raw_values json
);
