-- The report page: per provider, the offers priced tonight and how old their newest and oldest prices are, in
-- days before the night was published.
with night as (
    select max(published_at) as published_at from gpu_cost_ranking
),

final as (
    select
        prices.provider,
        count(*) as offers,
        max(prices.observed_at) as newest_observed_at,
        min(prices.observed_at) as oldest_observed_at,
        date_diff('day', max(prices.observed_at), any_value(night.published_at)) as newest_price_age_days,
        date_diff('day', min(prices.observed_at), any_value(night.published_at)) as oldest_price_age_days
    from prices_current as prices
    cross join night
    group by prices.provider
)

select * from final order by provider;
