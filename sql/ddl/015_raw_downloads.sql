-- What `gpucost fetch` downloaded from the providers' price APIs: one row per HTTP response that
-- arrived whole (200 saved to disk, 304 not modified, or a 200 quarantined as the wrong format).
-- Cut or failed requests leave no row. The files may be pruned later; these rows and what was
-- ingested from the files (raw.ingested_files, their landed copies under landing/, by content_sha256) stay.
create table if not exists raw.downloads (
    run_id varchar not null,            -- one fetch run (uuid)
    provider varchar not null,          -- fetcher: azure | aws | aws-spot | gcp | skypilot
    url varchar not null,               -- as requested (API keys are sent as headers, never in the URL)
    http_status integer not null,       -- 200 | 304
    outcome varchar not null,           -- downloaded | not_modified | quarantined
    etag varchar,                       -- ETag header, for the next conditional GET
    last_modified varchar,              -- Last-Modified header (HTTP date), for If-Modified-Since
    content_type varchar,
    size_bytes bigint not null,         -- bytes written to disk (0 for 304)
    content_sha256 varchar,             -- hex SHA-256 of the body (null for 304)
    path varchar,                       -- where it was saved under $GPUCOST_HOME/downloads
    watermark timestamptz,              -- aws-spot: newest price timestamp in the file (next fetch starts there)
    fetched_at timestamptz not null,    -- UTC start of the fetch run (the observation time of undated prices)
    downloaded_at timestamptz not null  -- UTC start of this response
);

-- One row per provider per fetch run: how it went, for the summary and published.price_fetch_status.
create table if not exists raw.fetch_attempts (
    run_id varchar not null,
    provider varchar not null,
    status varchar not null,  -- ok | unchanged | partial | failed | skipped
    detail varchar,           -- one line: why it failed or was skipped, what was partial
    pages integer not null,   -- HTTP responses received (200 and 304)
    files integer not null,   -- files handed to the adapters
    bytes bigint not null,    -- bytes downloaded
    seconds double not null,  -- wall time of the provider's fetch
    fetched_at timestamptz not null -- UTC start of the fetch run
);
