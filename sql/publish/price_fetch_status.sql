-- Per fetcher (`gpucost fetch`): how the newest fetch went and how old that provider's fetched prices are.
create table published.price_fetch_status as
with final as (
    select * from marts.price_fetch_status
)

select * from final;
