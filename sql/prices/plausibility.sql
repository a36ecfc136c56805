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

-- Per GPU or per instance? Each GPU's median USD per GPU-hour over its current offers of one pricing kind
-- (core.prices_current: on_demand, spot, reserved_1y ... apart) observed within gpu_median_window_days of the newest
-- of them (a price history's years-old rows are not tonight's market), the providers behind it, and the share of it
-- below which a NEW offer's price (observed in the same window) is taken for a per-instance price read as per GPU
-- (sql/prices/checked_rows.sql). `price_gpu_median_settings` (one row) and `price_gpu_median_exempt` are registered
-- from config/settings.toml [validation.prices] (min_share_of_gpu_median, gpu_median_min_providers,
-- gpu_median_window_days, gpu_median_exempt_providers: providers neither counted here nor checked). Only the GPUs
-- and pricing kinds the file prices are measured.
create or replace temp table staging_gpu_median_exempt as
select provider from price_gpu_median_exempt;

create or replace temp table staging_gpu_pricing_medians as
with settings as (
    select min_share_of_gpu_median, gpu_median_min_providers, gpu_median_window_days
    from price_gpu_median_settings
),

staged_kinds as (
    select distinct gpu, pricing
    from staging_file_rows
    where gpu is not null and record_kind is distinct from 'storage'
),

current_prices as (
    select
        current_offers.gpu,
        current_offers.pricing,
        current_offers.provider,
        current_offers.usd_per_gpu_hour,
        current_offers.observed_at,
        max(current_offers.observed_at) over (partition by current_offers.gpu, current_offers.pricing) as newest
    from core.prices_current as current_offers
    semi join staged_kinds using (gpu, pricing)
    anti join staging_gpu_median_exempt using (provider)
    where current_offers.usd_per_gpu_hour > 0 and isfinite(current_offers.usd_per_gpu_hour)
),

recent as (
    select current_prices.*, current_prices.newest - to_days(settings.gpu_median_window_days) as window_start
    from current_prices
    cross join settings
    where current_prices.observed_at >= current_prices.newest - to_days(settings.gpu_median_window_days)
),

medians as (
    select
        gpu,
        pricing,
        any_value(window_start) as window_start,
        median(usd_per_gpu_hour) as median_usd_per_gpu_hour,  -- USD per GPU-hour
        count(distinct provider) as providers,
        count(*) as offers
    from recent
    group by gpu, pricing
),

final as (
    select
        medians.gpu,
        medians.pricing,
        medians.window_start,
        medians.median_usd_per_gpu_hour,
        medians.providers,
        medians.offers,
        settings.min_share_of_gpu_median
    from medians
    cross join settings
    where medians.providers >= settings.gpu_median_min_providers
)

select * from final;
