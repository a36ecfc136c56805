-- What was quarantined, per night, dataset, file and reason (rows) or error (whole files).
create table published.quarantine_summary as
with rows_by_reason as (
    select
        quarantined_at::date as quarantined_on,
        dataset,
        'row' as kind,
        source_file,
        failed_check as reason,
        count(*) as rows_quarantined,
        min(source_line) as first_source_line,
        max(quarantined_at) as last_quarantined_at
    from quarantine.rejected_rows
    group by all
),

files as (
    select
        quarantined_at::date as quarantined_on,
        dataset,
        'file' as kind,
        source_file,
        error as reason,
        null::bigint as rows_quarantined,
        null::bigint as first_source_line,
        max(quarantined_at) as last_quarantined_at
    from quarantine.rejected_files
    group by all
),

final as (
    select * from rows_by_reason
    union all
    select * from files
)

select * from final
order by quarantined_on desc, dataset asc, kind asc, rows_quarantined desc nulls last, source_file asc;
