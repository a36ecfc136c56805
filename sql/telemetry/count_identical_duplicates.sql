-- Identical extra rows of a run_id in the file (skipped: the first is kept).
select count(*) from staging_run_duplicates where duplicate = 'identical'
