-- Every dated price observation, in the one normalised shape every adapter produces.
create table if not exists core.price_observations (
    provider         varchar not null,  -- aws | gcp | azure | lambda | owned | ...
    region           varchar not null,
    zone             varchar,           -- availability zone (name or ID, as the source gives it); null = region-wide
    instance_type    varchar not null,
    gpu              varchar not null,  -- canonical GPU id (data/reference/gpu_aliases.csv)
    gpu_name         varchar,           -- the GPU name as the source spelled it
    gpu_count        double not null,   -- GPUs per instance (fractions for partitioned GPUs)
    gpu_memory_gb    double,            -- per GPU, GB
    vcpus            double,
    memory_gb        double,            -- host RAM, GiB
    pricing          varchar not null,  -- on_demand | spot
    usd_per_hour     double not null,   -- USD per instance-hour
    usd_per_gpu_hour double not null,   -- USD per GPU-hour = usd_per_hour / gpu_count
    currency         varchar not null,  -- always USD in core (converted upstream if needed)
    observed_at      timestamptz not null, -- UTC; from the file where it has one, else the ingest time
    source_file      varchar not null,
    source_line      bigint,
    content_sha256   varchar not null,
    ingested_at      timestamptz not null -- UTC
);

-- Owned GPUs (format `owned`): what power costs at the site, so that rankings can add energy to the
-- amortised hardware price. Null for cloud offers (power is in the cloud price). `add column if not
-- exists` also upgrades warehouses created before these columns existed.
alter table core.price_observations add column if not exists electricity_usd_per_kwh double; -- USD per kWh
alter table core.price_observations add column if not exists pue double;  -- power usage effectiveness (>= 1)
