-- After 030 (which may add columns): a view's `*` is expanded when the view is created.
-- The newest observation of each offer (provider, region, zone, instance type, pricing).
create or replace view core.prices_current as
with ranked as (
    select
        *,
        row_number() over (
            partition by provider, region, coalesce(zone, ''), instance_type, pricing
            order by observed_at desc, ingested_at desc, source_line desc
        ) as recency
    from core.price_observations
),

final as (
    select * exclude (recency) from ranked where recency = 1
)

select * from final;
