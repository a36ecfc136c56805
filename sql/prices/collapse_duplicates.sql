-- Identical rows of one file are one observation: every normalised row equal in all its values (but its row key
-- and line) to an earlier row of the file is dropped from staging_file_rows (the first is kept; the records
-- as read stay in staging_file_records). The caller counts the rows before and after.
delete from staging_file_rows
where _row_id not in (
    select first_row_id
    from (
        select * exclude (_row_id, source_line), min(_row_id) as first_row_id
        from staging_file_rows
        group by all
    )
)
