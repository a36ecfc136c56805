-- GPU names of rejected runs that the alias table does not know (listed in the file's outcome).
with rejected as (
    select staged.unknown_gpu
    from staging_file_rows as staged
    inner join staging_file_failures as failures on staged._row_id = failures._row_id
    where staged.unknown_gpu is not null
),

final as (
    select distinct unknown_gpu from rejected
)

select * from final order by unknown_gpu
