-- After 030 (which may add columns): a view's `*` is expanded when the view is created.

-- The newest row of each key of an observation table (`observations`: a table, view or CTE name; `observation_key`:
-- an expression over its columns): the latest observed, then the latest ingested, then the last in its file.
create or replace macro core.newest_observations(observations, observation_key) as table
    with ranked as (
        select
            *,
            row_number() over (
                partition by observation_key
                order by observed_at desc, ingested_at desc, source_line desc
            ) as recency
        from query_table(observations)
    ),

    final as (
        select * exclude (recency) from ranked where recency = 1
    )

    select * from final;

-- The newest price observation of each offer (provider, region, zone, instance type, pricing, and for commitments
-- the purchase option and offering class) among `observations` (core.price_observations or a part of it).
create or replace macro core.newest_prices(observations) as table
    select * from core.newest_observations(
            observations,
            (
                provider, region, coalesce(zone, ''), instance_type, pricing,
                coalesce(purchase_option, ''), coalesce(offering_class, '')
            )
        );

create or replace view core.prices_current as
select * from core.newest_prices('core.price_observations');

-- The newest storage price of each (provider, region, storage type).
create or replace view core.storage_prices_current as
select * from core.newest_observations('core.storage_price_observations', (provider, region, storage_type));
