-- Per fetcher: status of the newest fetch and the age of its last good prices (sql/fetch/fetch_status.sql
-- is the same query, read by the fetch summary).
create or replace view marts.price_fetch_status as
with latest as (
    select
        *,
        row_number() over (partition by provider order by fetched_at desc) as recency
    from raw.fetch_attempts
),

good as (
    select provider, max(fetched_at) as last_success_at
    from raw.fetch_attempts
    where status in ('ok', 'unchanged', 'partial')
    group by provider
),

final as (
    select
        l.provider,
        l.status,
        l.detail,
        l.fetched_at as last_attempt_at,
        g.last_success_at,
        round(date_diff('second', g.last_success_at, current_timestamp) / 86400.0, 2) as price_age_days,
        l.pages,
        l.files,
        l.bytes,
        l.seconds
    from latest as l
    left join good as g using (provider)
    where l.recency = 1
)

select * from final;
