-- Rejected rows of the file being ingested, per failed check (most frequent first).
with failures as (
    select * from staging.file_failures
),

final as (
    select failed_check, count(*) as rows_failed
    from failures
    group by failed_check
)

select * from final order by rows_failed desc, failed_check
