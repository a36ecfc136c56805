-- GPU names of rejected rows that the alias table does not know (listed in the file's outcome).
with rejected as (
    select staged.gpu_name
    from staging_file_rows as staged
    inner join staging_file_failures as failures on staged._row_id = failures._row_id
    where staged.gpu is null and staged.gpu_name is not null
),

final as (
    select distinct gpu_name from rejected
)

select * from final order by gpu_name
