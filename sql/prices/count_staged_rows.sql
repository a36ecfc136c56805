-- The normalised rows staged for the file so far.
select count(*) as staged_rows from staging_file_rows
