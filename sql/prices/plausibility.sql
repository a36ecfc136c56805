-- What the plausibility of each staged price row is measured against, for the rows of every offer, new or known
-- (the price move, sql/prices/price_move_factor.sql, needs a previous price); sql/prices/checked_rows.sql joins
-- them to the rows where they are read:
-- - staging_gpu_medians: each GPU's median USD per GPU-hour over every current offer (core.prices_current: all
--   providers, regions and pricing kinds) and this file's own rows;
-- - staging_price_classes: each GPU's class floor and ceiling (`price_gpu_classes`, registered from
--   config/settings.toml [[validation.prices.gpu_classes]]; a GPU in no class has none).
-- Runs on the writer's connection in the file's transaction; the suite checks the columns (expectations/prices.json).
create or replace temp table staging_gpu_medians as
with priced as (
    select gpu, usd_per_gpu_hour
    from staging_file_rows
    where gpu is not null and usd_per_gpu_hour > 0 and record_kind is distinct from 'storage'
),

current_prices as (
    select gpu, usd_per_gpu_hour
    from core.prices_current
    where gpu is not null and usd_per_gpu_hour > 0 and gpu in (select gpu from priced)
),

final as (
    select gpu, median(usd_per_gpu_hour) as median_usd_per_gpu_hour  -- USD per GPU-hour
    from (
        select * from priced
        union all
        select * from current_prices
    ) as prices
    group by gpu
)

select * from final;

create or replace temp table staging_price_classes as
select gpu, min_usd_per_gpu_hour, max_usd_per_gpu_hour from price_gpu_classes;
