-- Every base table of the database (the pre-flight check reads each one whole).
with final as (
    select database_name || '.' || schema_name || '.' || table_name as table_name
    from duckdb_tables()
    where not temporary and database_name = current_database()
)

select * from final
order by table_name;
