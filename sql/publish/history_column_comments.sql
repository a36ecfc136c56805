-- gpu_cost_ranking_history has the columns of gpu_cost_ranking: one COMMENT statement per column copying
-- the ranking's comment (sql/publish/comments.sql, the one list), for the publisher to run. DuckDB binds
-- no parameter for an identifier, so the statements are built here from the catalog, the identifier and
-- the text quoted by SQL's own rules (never from Python strings).
with ranking_columns as (
    select column_name, comment
    from duckdb_columns()
    where database_name = 'published' and schema_name = 'main' and table_name = 'gpu_cost_ranking'
        and comment is not null
),

final as (
    select
        'comment on column published.gpu_cost_ranking_history."' || replace(column_name, '"', '""')
        || '" is ''' || replace(comment, '''', '''''') || '''' as statement
    from ranking_columns
)

select * from final
