-- The night's current offers, read once (core.prices_current is a window over every observation), each with the
-- batch of offers it is ranked in: $offer_batches batches by a hash of the offer's key (its provider, region,
-- zone, instance type, pricing, purchase option and offering class), so that one batch of workloads x one batch of
-- offers stays about config/ranking.toml [compute] rows_per_batch rows however many offers there are.
create or replace temp table ranking_offers as
with offers as (
    select * from core.prices_current
),

final as (
    select
        *,
        hash(
            provider, region, coalesce(zone, ''), instance_type, pricing, coalesce(purchase_option, ''),
            coalesce(offering_class, '')
        ) % $offer_batches::ubigint as offer_batch
    from offers
)

select * from final;
