-- How plausible each staged price row is, against the data itself and the configured bounds, for the rows of
-- every offer, new or known (the price move, sql/prices/price_move_factor.sql, needs a previous price):
-- - gpu_price_factor: the row's USD per GPU-hour against the median of the same GPU over every current offer
--   (core.prices_current: all providers, regions and pricing kinds) and this file's own rows, either direction
--   (>= 1); null without a GPU or a positive price;
-- - vs_class_floor / vs_class_ceiling: the price over its GPU class's floor (< 1 is below it) and ceiling
--   (> 1 is above it); null for a GPU in no class (`price_gpu_classes`, registered from config/settings.toml
--   [[validation.prices.gpu_classes]]);
-- - observed_hours_ahead: how far the observation is dated after the ingest (hours; negative = in the past).
-- Runs on the writer's connection in the file's transaction; the suite checks the columns (expectations/prices.json).
create or replace temp table staging_price_plausibility as
with staged as (
    select _row_id, gpu, usd_per_gpu_hour, observed_at, ingested_at, record_kind
    from staging_file_rows
),

priced as (
    select gpu, usd_per_gpu_hour
    from staged
    where gpu is not null and usd_per_gpu_hour > 0 and record_kind is distinct from 'storage'
),

current_prices as (
    select gpu, usd_per_gpu_hour
    from core.prices_current
    where gpu is not null and usd_per_gpu_hour > 0 and gpu in (select gpu from priced)
),

gpu_medians as (
    select gpu, median(usd_per_gpu_hour) as median_usd_per_gpu_hour  -- USD per GPU-hour
    from (
        select * from priced
        union all
        select * from current_prices
    ) as prices
    group by gpu
),

classes as (
    select gpu, min_usd_per_gpu_hour, max_usd_per_gpu_hour from price_gpu_classes
),

final as (
    select
        staged._row_id,
        -- the condition in parentheses: sqlfluff's DuckDB grammar cannot parse a bare `is distinct from` in `case when`
        case when (staged.usd_per_gpu_hour > 0 and staged.record_kind is distinct from 'storage')
                then greatest(
                        staged.usd_per_gpu_hour / medians.median_usd_per_gpu_hour,
                        medians.median_usd_per_gpu_hour / staged.usd_per_gpu_hour
                    )
        end as gpu_price_factor,                                              -- >= 1 either direction
        staged.usd_per_gpu_hour / classes.min_usd_per_gpu_hour as vs_class_floor,    -- < 1: below the floor
        staged.usd_per_gpu_hour / classes.max_usd_per_gpu_hour as vs_class_ceiling,  -- > 1: above the ceiling
        epoch(staged.observed_at - staged.ingested_at) / 3600.0 as observed_hours_ahead  -- hours
    from staged
    left join gpu_medians as medians on staged.gpu = medians.gpu
    left join classes on staged.gpu = classes.gpu and staged.record_kind is distinct from 'storage'
)

select * from final;

alter table staging_file_rows add column gpu_price_factor double;      -- >= 1 either direction
alter table staging_file_rows add column vs_class_floor double;        -- ratio; < 1 is below the class floor
alter table staging_file_rows add column vs_class_ceiling double;      -- ratio; > 1 is above the class ceiling
alter table staging_file_rows add column observed_hours_ahead double;  -- hours after the ingest

update staging_file_rows as staged
set
    gpu_price_factor = plausibility.gpu_price_factor,
    vs_class_floor = plausibility.vs_class_floor,
    vs_class_ceiling = plausibility.vs_class_ceiling,
    observed_hours_ahead = plausibility.observed_hours_ahead
from staging_price_plausibility as plausibility
where staged._row_id = plausibility._row_id;

drop table staging_price_plausibility;
