-- The price of each offer on a date: the newest observation made on or before the end of that day (UTC).
-- Parameters: $on_date (DATE), $provider, $instance_type, $pricing (null = any).
-- ST03 waived below: `newest` reads the CTE by its name (query_table in the macro)
with observations as (  -- noqa: ST03
    select * from core.price_observations
    where provider = $provider
        and instance_type = $instance_type
        and ($pricing is null or pricing = $pricing)
        and observed_at < timezone('UTC', $on_date::date + interval 1 day)  -- end of the day, UTC
),

newest as (
    select * from core.newest_prices('observations')  -- sql/ddl/031_core_prices_current.sql
),

final as (
    select
        $on_date::date as on_date,        -- the day asked about (UTC)
        provider,
        region,
        zone,
        instance_type,
        gpu,
        gpu_count,
        pricing,
        purchase_option,                  -- commitments: no_upfront | partial_upfront | all_upfront | term_total
        offering_class,                   -- AWS commitments: standard | convertible
        usd_per_hour,                     -- USD per instance-hour (commitments: effective over the term)
        usd_per_gpu_hour,                 -- USD per GPU-hour
        observed_at as price_observed_at  -- UTC; when the price in force that day was seen
    from newest
)

select * from final order by provider, region, zone, instance_type, pricing, purchase_option, offering_class
