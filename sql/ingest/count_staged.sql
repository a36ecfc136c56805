-- Staged rows of the file being ingested, and how many of them failed a check.
select
    (select count(*) from staging_file_rows) as rows_staged,
    (select count(*) from staging_file_failures) as rows_failed
