-- For each staged price row that has one: the previous observation of the same offer and how far the price
-- moved. Previous = the newest stored observation at or before the row's time (ASOF join); where the offer has
-- none yet, the previous row of the same offer in the same file (dated history files).
-- `staging_file_rows` holds the file's normalised rows (sql/prices/normalise.sql); this runs on the writer's
-- connection, against the observations stored so far (a file staged elsewhere is compared when it is applied).
-- Only rows that can have a previous price are joined and sorted: those whose offer the warehouse already holds
-- (the ASOF join's input), and those whose offer comes more than once in the file (the in-file window's); the
-- result holds the rows with a previous price only (sql/prices/stage_rows.sql sets them on the staged rows).
-- A commitment's offer key also holds its purchase option and offering class (one instance and term has up to
-- six AWS offers: No / Partial / All Upfront x standard / convertible).
create or replace temp table staging_price_moves as
with staged as not materialized (
    -- read where used, three times (materialised, the 1.9 M rows of a 10^6-row catalog were stored once more)
    select
        _row_id, provider, region, coalesce(zone, '') as zone_key, instance_type, pricing,
        coalesce(purchase_option, '') as option_key, coalesce(offering_class, '') as class_key,
        observed_at, source_line, usd_per_hour
    from staging_file_rows
),

stored as (
    select
        provider, region, coalesce(zone, '') as zone_key, instance_type, pricing,
        coalesce(purchase_option, '') as option_key, coalesce(offering_class, '') as class_key,
        observed_at, usd_per_hour
    from core.price_observations
),

stored_instances as (
    select distinct provider, region, instance_type from stored
),

known as (
    -- the staged rows of instances the warehouse has prices for (a first ingest: none)
    select staged.* from staged semi join stored_instances using (provider, region, instance_type)
),

previous_stored as (
    select known._row_id, stored.usd_per_hour as previous_usd_per_hour
    from known
    asof inner join stored
        on known.provider = stored.provider
            and known.region = stored.region
            and known.zone_key = stored.zone_key
            and known.instance_type = stored.instance_type
            and known.pricing = stored.pricing
            and known.option_key = stored.option_key
            and known.class_key = stored.class_key
            and known.observed_at >= stored.observed_at
),

offer_hashes as not materialized (
    select *, hash(provider, region, zone_key, instance_type, pricing, option_key, class_key) as offer_hash
    from staged
),

repeated_hashes as (
    -- offers that come more than once in the file, by the hash of their key: a collision only adds rows to the
    -- window below, which partitions by the key itself
    select offer_hash from offer_hashes group by offer_hash having count(*) > 1
),

repeated as (
    select offer_hashes.* exclude (offer_hash)
    from offer_hashes semi join repeated_hashes using (offer_hash)
),

previous_in_file as (
    select
        _row_id,
        lag(usd_per_hour) over (
            partition by provider, region, zone_key, instance_type, pricing, option_key, class_key
            order by observed_at, source_line
        ) as previous_usd_per_hour
    from repeated
),

candidates as (
    -- the stored observation first, then the file's own previous row
    select _row_id, previous_usd_per_hour, 0 as preference from previous_stored
    union all
    select _row_id, previous_usd_per_hour, 1 as preference from previous_in_file
    where previous_usd_per_hour is not null
),

previous as (
    select _row_id, arg_min(previous_usd_per_hour, preference) as previous_usd_per_hour  -- USD per instance-hour
    from candidates
    where previous_usd_per_hour is not null
    group by _row_id
),

final as (
    select
        previous._row_id,
        previous.previous_usd_per_hour,
        case
            when staged.usd_per_hour > 0 and previous.previous_usd_per_hour > 0
                then greatest(
                        staged.usd_per_hour / previous.previous_usd_per_hour,
                        previous.previous_usd_per_hour / staged.usd_per_hour
                    )
        end as price_move_factor  -- >= 1 either direction; null when there is nothing to compare with
    from previous
    inner join staged using (_row_id)
)

select * from final
