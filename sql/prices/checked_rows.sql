-- The staged price rows the suite validates: the normalised rows (sql/prices/normalise.sql, renamed here to
-- staging_price_rows) with the columns measured against the warehouse, joined where they are read (a view: the
-- 1.9 M rows of a 10^6-row catalog are not stored a second time, nor updated in place):
-- - previous_usd_per_hour, price_move_factor: the previous observation of the offer and how far the price moved
--   (staging_price_moves, sql/prices/price_move_factor.sql: only the rows that have a previous price; the others
--   stay null);
-- - gpu_price_factor: the row's USD per GPU-hour against its GPU's median (staging_gpu_medians), either direction
--   (>= 1); null without a GPU or a positive price;
-- - vs_class_floor / vs_class_ceiling: the price over its GPU class's floor (< 1 is below it) and ceiling (> 1 is
--   above it); null for a GPU in no class (staging_price_classes).
-- - share_of_gpu_median: a NEW offer's (no previous price) USD per GPU-hour over the median of its GPU's current
--   offers of the same pricing kind (staging_gpu_pricing_medians, sql/prices/plausibility.sql; null where that
--   median stands on too few providers, for a row older than the median's window, or for an exempt provider);
--   per_gpu_price_doubt: below the configured
--   share, why, naming both figures and, where the price as given would be plausible per GPU-hour, saying so
--   (a per-GPU price read as the whole instance's); sql/prices/combine_failures.sql adds it to the reason.
-- Storage volume prices (record_kind 'storage') are not GPU prices: no factor, no class.
alter table staging_file_rows rename to staging_price_rows;

create temp view staging_file_rows as
select
    staged.*,
    moves.previous_usd_per_hour,                                                -- USD per instance-hour
    moves.price_move_factor,                                                    -- >= 1 either direction
    -- the condition in parentheses: sqlfluff's DuckDB grammar cannot parse a bare `is distinct from` in `case when`
    case when (staged.usd_per_gpu_hour > 0 and staged.record_kind is distinct from 'storage')
            then greatest(
                    staged.usd_per_gpu_hour / medians.median_usd_per_gpu_hour,
                    medians.median_usd_per_gpu_hour / staged.usd_per_gpu_hour
                )
    end as gpu_price_factor,                                                    -- >= 1 either direction
    staged.usd_per_gpu_hour / classes.min_usd_per_gpu_hour as vs_class_floor,   -- < 1: below the floor
    staged.usd_per_gpu_hour / classes.max_usd_per_gpu_hour as vs_class_ceiling,  -- > 1: above the ceiling
    case when staged.usd_per_gpu_hour > 0
            then staged.usd_per_gpu_hour / kinds.median_usd_per_gpu_hour
    end as share_of_gpu_median,                                                 -- < 1: below the median
    case when staged.usd_per_gpu_hour > 0
            and staged.usd_per_gpu_hour < kinds.min_share_of_gpu_median * kinds.median_usd_per_gpu_hour
            then 'usd_per_gpu_hour ' || printf('%g', staged.usd_per_gpu_hour) || ' is below '
                || printf('%g', kinds.min_share_of_gpu_median) || ' × the ' || staged.gpu || ' '
                || replace(staged.pricing, '_', '-') || ' median ' || printf('%.3g', kinds.median_usd_per_gpu_hour)
                || ' across ' || kinds.providers || ' providers (' || kinds.offers || ' current offers)'
                || case when staged.gpu_count > 1
                        and staged.usd_per_hour >= kinds.min_share_of_gpu_median * kinds.median_usd_per_gpu_hour
                        then '; the price given, ' || printf('%g', staged.usd_per_hour) || ' USD/h, is plausible '
                            || 'per GPU-hour, not for the whole ' || printf('%g', staged.gpu_count) || '-GPU '
                            || 'instance (a per-GPU price read as per instance?)'
                    else ''
                end
    end as per_gpu_price_doubt
from staging_price_rows as staged
left join staging_price_moves as moves on staged._row_id = moves._row_id
left join staging_gpu_medians as medians on staged.gpu = medians.gpu
left join staging_price_classes as classes
    on staged.gpu = classes.gpu and staged.record_kind is distinct from 'storage'
left join staging_gpu_median_exempt as exempt on staged.provider = exempt.provider
-- a new offer only (a known one's move is price_move_factor's), of a provider the check is not exempt for
left join staging_gpu_pricing_medians as kinds
    on staged.gpu = kinds.gpu
        and staged.pricing = kinds.pricing
        and moves.previous_usd_per_hour is null
        and staged.observed_at >= kinds.window_start
        and exempt.provider is null
        and staged.record_kind is distinct from 'storage';
