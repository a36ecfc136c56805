-- The price of each offer on a date: the newest observation made on or before the end of that day (UTC).
-- Parameters: $on_date (DATE), $provider, $instance_type, $pricing (null = any).
with observations as (
    select * from core.price_observations
    where provider = $provider
        and instance_type = $instance_type
        and ($pricing is null or pricing = $pricing)
        and observed_at < timezone('UTC', $on_date::date + interval 1 day)  -- end of the day, UTC
),

ranked as (
    select
        *,
        row_number() over (
            partition by
                provider, region, coalesce(zone, ''), instance_type, pricing,
                coalesce(purchase_option, ''), coalesce(offering_class, '')
            order by observed_at desc, ingested_at desc, source_line desc
        ) as recency
    from observations
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
    from ranked
    where recency = 1
)

select * from final order by provider, region, zone, instance_type, pricing, purchase_option, offering_class
