-- One row per staged row that failed the suite: its failed checks joined in suite order.
-- `staging_suite_check_rows` holds one row per failed check (tasks/ingest/validation.py, every part checked).
create or replace temp table staging_suite_failures as
with checks as (
    select * from staging_suite_check_rows
),

final as (
    select _row_id, string_agg(failed_check, '; ' order by check_order) as failed_check
    from checks
    group by _row_id
)

select * from final
