-- Registry of every file the pipeline has read, keyed by the SHA-256 of its bytes:
-- the same bytes twice are skipped; a changed file is a new entry (and new observations).
create table if not exists raw.ingested_files (
    dataset varchar not null,         -- 'prices' | 'telemetry'
    content_sha256 varchar not null,  -- hex SHA-256 of the file's bytes
    source_file varchar not null,     -- path as given to the ingest
    provider varchar,                 -- price lists: provider named by the sources file or CLI
    format varchar,                   -- adapter that read the file
    size_bytes bigint,
    rows_read bigint,                 -- records the adapter produced (after skips)
    rows_skipped bigint,              -- records outside scope (e.g. Windows, reservations), by design
    rows_loaded bigint,               -- records that passed validation into core
    rows_quarantined bigint,          -- records that failed validation
    status varchar not null,          -- 'loaded' | 'quarantined' (whole file rejected)
    skipped_by_reason json,           -- {reason: count}
    ingested_at timestamptz not null, -- UTC
    primary key (dataset, content_sha256)
);

-- Where the file's bytes landed (tasks/ingest/landing.py), relative to the landing folder beside the warehouse
-- file: <sha[:2]>/<sha><suffix>.zst (a Parquet file as is); null = nothing landed (a file registered before the
-- landing zone and without records, or a landed file retention removed). Core and quarantine rows carry
-- (content_sha256, source_line) back to it.
alter table raw.ingested_files add column if not exists landed_path varchar;
