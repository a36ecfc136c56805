-- Identical rows of one file are one observation: every normalised row equal in all its values (but its row key
-- and line) to an earlier row of the file is dropped from staging_file_rows (the first is kept; the records
-- as read stay in staging_file_records). The caller counts the rows before and after.
-- Rows are compared by a hash of their values first: only rows whose hash repeats (none, in a file without
-- duplicates) are compared value by value, so the memory this takes does not grow with every value of every row.
with hashed as (
    select
        _row_id,
        hash(*columns(* exclude (_row_id, source_line))) as row_hash
    from staging_file_rows
),

repeated_hashes as (
    select row_hash
    from hashed
    group by row_hash
    having count(*) > 1
),

repeated_rows as (
    select hashed._row_id
    from hashed
    semi join repeated_hashes on hashed.row_hash = repeated_hashes.row_hash
),

candidates as (
    select staged.*
    from staging_file_rows as staged
    semi join repeated_rows on staged._row_id = repeated_rows._row_id
),

first_of_identical as (
    select
        * exclude (_row_id, source_line),
        min(_row_id) as first_row_id
    from candidates
    group by all
),

final as (
    select candidates._row_id
    from candidates
    anti join first_of_identical on candidates._row_id = first_of_identical.first_row_id
)

delete from staging_file_rows
where _row_id in (select _row_id from final)
