-- The failing (row, expectation) pairs of the file being ingested, gathered over every part of the suite
-- that was checked (tasks/ingest/validation.py: a worker checks some expectations, the writer the rest).
create temp table if not exists staging_suite_check_rows (
    _row_id bigint,       -- staging_file_rows row key
    check_order integer,  -- the expectation's place in the suite (orders a row's failed checks)
    failed_check varchar  -- the quarantine reason of that expectation
)
