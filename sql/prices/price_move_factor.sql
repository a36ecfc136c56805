-- For each staged price row: the previous observation of the same offer and how far the price moved.
-- Previous = the newest stored observation at or before the row's time (ASOF join); where the offer
-- has none yet, the previous row of the same offer in the same file (dated history files).
-- `staging.file_rows` holds the file's normalised rows (sql/prices/normalise.sql); this runs on the writer's
-- connection, against the observations stored so far (a file staged elsewhere is compared when it is applied).
-- Only the key columns pass through the joins and the sort (joined back by row key: sql/prices/stage_rows.sql).
-- A commitment's offer key also holds its purchase option and offering class (one instance and term has up to
-- six AWS offers: No / Partial / All Upfront x standard / convertible).
with staged as (
    select
        _row_id, provider, region, zone, instance_type, pricing,
        coalesce(purchase_option, '') as option_key, coalesce(offering_class, '') as class_key,
        observed_at, source_line, usd_per_hour
    from staging.file_rows
),

stored as (
    select
        provider, region, coalesce(zone, '') as zone_key, instance_type, pricing,
        coalesce(purchase_option, '') as option_key, coalesce(offering_class, '') as class_key,
        observed_at, usd_per_hour
    from core.price_observations
),

previous_stored as (
    select staged._row_id, stored.usd_per_hour as previous_usd_per_hour
    from staged
    asof left join stored
        on staged.provider = stored.provider
        and staged.region = stored.region
        and coalesce(staged.zone, '') = stored.zone_key
        and staged.instance_type = stored.instance_type
        and staged.pricing = stored.pricing
        and staged.option_key = stored.option_key
        and staged.class_key = stored.class_key
        and staged.observed_at >= stored.observed_at
),

previous_in_file as (
    select
        _row_id,
        lag(usd_per_hour) over (
            partition by provider, region, coalesce(zone, ''), instance_type, pricing, option_key, class_key
            order by observed_at, source_line
        ) as previous_usd_per_hour
    from staged
),

joined as (
    select
        staged._row_id,
        staged.usd_per_hour,
        coalesce(previous_stored.previous_usd_per_hour, previous_in_file.previous_usd_per_hour)
            as previous_usd_per_hour  -- USD per instance-hour
    from staged
    left join previous_stored using (_row_id)
    left join previous_in_file using (_row_id)
),

final as (
    select
        _row_id,
        previous_usd_per_hour,
        case
            when usd_per_hour > 0 and previous_usd_per_hour > 0
            then greatest(usd_per_hour / previous_usd_per_hour, previous_usd_per_hour / usd_per_hour)
        end as price_move_factor  -- >= 1 either direction; null when there is nothing to compare with
    from joined
)

select * from final order by _row_id
