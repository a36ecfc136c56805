-- Which version holds `champion`, read from MLflow's own registry table in PostgreSQL.
with final as (
    select name, alias, version
    from registered_model_aliases
    where alias = 'champion'
)
select * from final
order by name
