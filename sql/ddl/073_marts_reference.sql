-- Reference tables the ranking joins, empty until tasks.reference.load_reference_tables fills them from
-- data/reference (sql/common/load_instance_machines.sql, load_region_carbon.sql): a warehouse without them
-- ranks with the documented defaults (config/ranking.toml [machines]; carbon null with its reason).
create table if not exists core.instance_machines (
    provider varchar,
    instance_type varchar,
    gpus double,                  -- GPUs per instance (count)
    scale_up_domain_gpus bigint,  -- GPUs sharing NVLink/xGMI (count)
    scale_up_kind varchar,
    network_gbps double,          -- Gb/s (gigabits) of scale-out network per instance
    network_kind varchar,
    source varchar
);

create table if not exists core.region_carbon (
    provider varchar,
    region varchar,
    grid_gco2e_per_kwh double,  -- g CO2e per kWh, location-based grid average
    year integer,               -- the year the intensity describes
    cfe_share double,           -- carbon-free energy share (0-1) where the provider publishes one
    source varchar
);
