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

-- The newest observation of each offer (provider, region, zone, instance type, pricing).
create or replace view core.prices_current as
with ranked as (
    select
        *,
        row_number() over (
            partition by provider, region, coalesce(zone, ''), instance_type, pricing
            order by observed_at desc, ingested_at desc, source_line desc
        ) as recency
    from core.price_observations
),

final as (
    select * exclude (recency) from ranked where recency = 1
)

select * from final;
