-- Registry of every file the pipeline has read, keyed by the SHA-256 of its bytes:
-- the same bytes twice are skipped; a changed file is a new entry (and new observations).
create table if not exists raw.ingested_files (
    dataset          varchar not null,   -- 'prices' | 'telemetry'
    content_sha256   varchar not null,   -- hex SHA-256 of the file's bytes
    source_file      varchar not null,   -- path as given to the ingest
    provider         varchar,            -- price lists: provider named by the sources file or CLI
    format           varchar,            -- adapter that read the file
    size_bytes       bigint,
    rows_read        bigint,             -- records the adapter produced (after skips)
    rows_skipped     bigint,             -- records outside scope (e.g. Windows, reservations), by design
    rows_loaded      bigint,             -- records that passed validation into core
    rows_quarantined bigint,             -- records that failed validation
    status           varchar not null,   -- 'loaded' | 'quarantined' (whole file rejected)
    skipped_by_reason json,              -- {reason: count}
    ingested_at      timestamptz not null, -- UTC
    primary key (dataset, content_sha256)
);

-- Every price record as it came in, before normalisation (one JSON object per native record).
create table if not exists raw.price_records (
    content_sha256 varchar not null,
    source_file    varchar not null,
    source_line    bigint,              -- 1-based line (CSV/TSV) or record index (JSON) in the file
    provider       varchar,
    format         varchar,
    raw_values     json
);

-- Every telemetry record as it came in, all columns kept (also those outside the contract).
create table if not exists raw.telemetry_records (
    content_sha256 varchar not null,
    source_file    varchar not null,
    source_line    bigint,
    raw_values     json
);
