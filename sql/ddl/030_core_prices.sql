-- Every dated price observation, in the one normalised shape every adapter produces.
create table if not exists core.price_observations (
    provider varchar not null,         -- aws | gcp | azure | lambda | owned | ...
    region varchar not null,
    zone varchar,                      -- availability zone (name or ID, as the source gives it); null = region-wide
    instance_type varchar not null,
    gpu varchar not null,              -- canonical GPU id (data/reference/gpu_aliases.csv)
    gpu_name varchar,                  -- the GPU name as the source spelled it
    gpu_count double not null,         -- GPUs per instance (fractions for partitioned GPUs)
    gpu_memory_gb double,              -- per GPU, GB
    vcpus double,
    memory_gb double,                  -- host RAM, GiB
    pricing varchar not null,          -- on_demand | spot
    usd_per_hour double not null,      -- USD per instance-hour
    usd_per_gpu_hour double not null,  -- USD per GPU-hour = usd_per_hour / gpu_count
    currency varchar not null,         -- always USD in core (converted upstream if needed)
    observed_at timestamptz not null, -- UTC; from the file where it has one, else the ingest time
    source_file varchar not null,
    source_line bigint,
    content_sha256 varchar not null,
    ingested_at timestamptz not null -- UTC
);

-- Owned GPUs (format `owned`): what power costs at the site, so that rankings can add energy to the
-- amortised hardware price. Null for cloud offers (power is in the cloud price). `add column if not
-- exists` also upgrades warehouses created before these columns existed.
alter table core.price_observations add column if not exists electricity_usd_per_kwh double; -- USD per kWh
alter table core.price_observations add column if not exists pue double;  -- power usage effectiveness (>= 1)

-- Commitments (pricing reserved_1y | reserved_3y | reserved_5y: AWS Reserved terms, Azure reservations,
-- GCP committed-use SKUs). Null for on-demand and spot rows. `usd_per_hour` of a commitment is its
-- EFFECTIVE hourly price over the whole term = upfront_usd / term_hours + recurring_usd_per_hour
-- (macro marts.commitment_usd_per_hour, sql/ddl/070_marts_cost_model.sql): the term is paid whether
-- the instance is used or not. purchase_option and offering_class are part of the offer's key.
-- hours in the commitment term (8760 per year)
alter table core.price_observations add column if not exists term_hours double;
-- USD per instance, paid once for the term
alter table core.price_observations add column if not exists upfront_usd double;
-- USD per instance-hour, billed every hour of the term
alter table core.price_observations add column if not exists recurring_usd_per_hour double;
-- no_upfront | partial_upfront | all_upfront | term_total (Azure: the term's price, upfront or monthly)
alter table core.price_observations add column if not exists purchase_option varchar;
-- AWS: standard | convertible; null elsewhere
alter table core.price_observations add column if not exists offering_class varchar;

-- Block-storage prices the price lists carry (the AWS offer file's EBS volumes): the checkpoint storage
-- of the cost model (config/ranking.toml [checkpoints]). History like the instance prices.
create table if not exists core.storage_price_observations (
    provider varchar not null,
    region varchar not null,
    storage_type varchar not null,     -- the provider's volume name, e.g. AWS volumeApiName gp3
    usd_per_gb_month double not null,  -- USD per GB-month (the provider's billed unit)
    observed_at timestamptz not null, -- UTC
    source_file varchar not null,
    source_line bigint,
    content_sha256 varchar not null,
    ingested_at timestamptz not null -- UTC
);
