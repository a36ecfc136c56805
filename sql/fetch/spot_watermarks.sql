-- aws-spot: per request (one per region), the newest price timestamp already fetched AND in the
-- warehouse; the next fetch asks only for prices since then.
with ingested as (
    select d.url, d.watermark
    from raw.downloads as d
    inner join raw.ingested_files as f
        on f.dataset = 'prices' and d.content_sha256 = f.content_sha256
    where d.provider = 'aws-spot' and d.watermark is not null
),

final as (
    select url, max(watermark) as watermark
    from ingested
    group by url
)

select * from final;
