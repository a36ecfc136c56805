-- Reference: grid carbon intensity per cloud region (data/reference/region_carbon.csv, built by
-- data/reference/build/region_carbon.py; each row's `source` names its dataset and year).
create or replace table core.region_carbon as
with source as (
    select * from read_csv($path, header = true, all_varchar = true)
),

final as (
    select
        provider,
        region,
        grid_gco2e_per_kwh::double as grid_gco2e_per_kwh,  -- g CO2e per kWh, location-based grid average
        year::integer as year,                             -- the year the intensity describes
        cfe_share::double as cfe_share,                    -- carbon-free energy share (0-1), where published
        source
    from source
)

select * from final
