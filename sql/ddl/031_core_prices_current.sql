-- After 030 (which may add columns): a view's `*` is expanded when the view is created.
-- The newest observation of each offer (provider, region, zone, instance type, pricing, and for
-- commitments the purchase option and offering class).
create or replace view core.prices_current as
with ranked as (
    select
        *,
        row_number() over (
            partition by
                provider, region, coalesce(zone, ''), instance_type, pricing,
                coalesce(purchase_option, ''), coalesce(offering_class, '')
            order by observed_at desc, ingested_at desc, source_line desc
        ) as recency
    from core.price_observations
),

final as (
    select * exclude (recency) from ranked where recency = 1
)

select * from final;

-- The newest storage price of each (provider, region, storage type).
create or replace view core.storage_prices_current as
with ranked as (
    select
        *,
        row_number() over (
            partition by provider, region, storage_type
            order by observed_at desc, ingested_at desc, source_line desc
        ) as recency
    from core.storage_price_observations
),

final as (
    select * exclude (recency) from ranked where recency = 1
)

select * from final;
