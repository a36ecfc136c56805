-- The newest observation of every offer.
create table published.prices_current as
with final as (
    select * from core.prices_current
)

select * from final
order by provider, region, zone, instance_type, pricing, purchase_option, offering_class;
