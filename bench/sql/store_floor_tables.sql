-- The store floor's table for a price file: the columns of core.price_observations that a SkyPilot offer fills
-- (sql/ddl/030_core_prices.sql), lineage included. Made before the measured step (set-up, as the warehouse's
-- tables are there before an ingest).
create table floor_offers (
    provider varchar not null,
    region varchar not null,
    zone varchar,
    instance_type varchar not null,
    gpu varchar not null,
    gpu_name varchar,
    gpu_count double not null,
    vcpus double,
    memory_gb double,
    pricing varchar not null,
    usd_per_hour double not null,
    usd_per_gpu_hour double not null,
    currency varchar not null,
    observed_at timestamptz not null,
    source_file varchar not null,
    source_line bigint,
    content_sha256 varchar not null,
    ingested_at timestamptz not null
)
