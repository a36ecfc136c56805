-- Accepted runs the source itself flags (stored, kept out of training), per flag, most frequent first.
with accepted as (
    select quality_flag from staging_file_rows
    anti join staging_file_failures using (_row_id)
    where quality_flag is not null
),

final as (
    select quality_flag, count(*) as runs
    from accepted
    group by quality_flag
)

select * from final order by runs desc, quality_flag asc
