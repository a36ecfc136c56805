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
    staged.usd_per_gpu_hour / classes.max_usd_per_gpu_hour as vs_class_ceiling  -- > 1: above the ceiling
from staging_price_rows as staged
left join staging_price_moves as moves on staged._row_id = moves._row_id
left join staging_gpu_medians as medians on staged.gpu = medians.gpu
left join staging_price_classes as classes
    on staged.gpu = classes.gpu and staged.record_kind is distinct from 'storage';
