-- The rows Great Expectations re-validates: failing rows of the part just checked (up to $rows) and the
-- file's first $rows rows.
create or replace temp table staging_crosscheck_ids as
with failing as (
    select distinct _row_id from staging_part_check_rows order by _row_id limit $rows
),

first_rows as (
    select _row_id from staging_file_rows order by _row_id limit $rows
),

final as (
    select _row_id from failing
    union
    select _row_id from first_rows
)

select * from final
