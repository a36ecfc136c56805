-- Rows that failed a check: never dropped, never silently fixed.
create table if not exists quarantine.rejected_rows (
    dataset varchar not null,            -- 'prices' | 'telemetry'
    source_file varchar,
    source_line bigint,                  -- 1-based line (or record index) in source_file
    failed_check varchar not null,       -- the expectation (or parser check) that failed, and why
    raw_values json,                     -- the record as read
    content_sha256 varchar,
    quarantined_at timestamptz not null  -- UTC
);

-- Whole files that could not be read (truncated, wrong columns, wrong encoding, ...).
create table if not exists quarantine.rejected_files (
    dataset varchar not null,
    source_file varchar not null,
    content_sha256 varchar,
    error varchar not null,
    quarantined_at timestamptz not null -- UTC
);
