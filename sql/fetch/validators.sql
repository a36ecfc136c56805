-- For each URL, the validators (ETag, Last-Modified) of its newest download whose content the
-- warehouse has (ingested or quarantined by the adapter): only then may a 304 skip it. `path` lets an
-- index file (not ingested itself) be re-read from disk after a 304.
with downloaded as (
    select
        d.url,
        d.etag,
        d.last_modified,
        d.path,
        d.content_sha256,
        f.content_sha256 is not null as content_in_warehouse,
        row_number() over (partition by d.url order by d.downloaded_at desc) as recency
    from raw.downloads as d
    left join raw.ingested_files as f
        on f.dataset = 'prices' and d.content_sha256 = f.content_sha256
    where d.outcome = 'downloaded' and d.provider = $provider
),

final as (
    select url, etag, last_modified, path, content_sha256, content_in_warehouse
    from downloaded
    where recency = 1
)

select * from final;
