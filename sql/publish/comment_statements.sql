-- The COMMENT statements of every published table and column, for the publisher to run, from the one list of
-- what each is and its units ($path: sql/publish/comments.csv; table_name, column_name, comment; an empty
-- column_name is the table's own comment). tests/ranking/test_publish.py checks that no column is left without.
-- gpu_cost_ranking_history has gpu_cost_ranking's columns and price_history prices_current's (and a few of its
-- own): a column the list does not describe for the copy takes the original's comment, so each is written once.
-- DuckDB binds no parameter for an identifier, so the statements are built here, the identifiers and the text
-- quoted by SQL's own rules (never from Python strings).
with listed as (
    select table_name, column_name, comment
    from read_csv(
            $path, header = true, auto_detect = false, quote = '"', escape = '"',
            columns = { 'table_name': 'varchar', 'column_name': 'varchar', 'comment': 'varchar' }
        )
),

copies as (
    -- AL05 waived below: the alias names the values' columns, which the join reads through *
    select * from (
        values ('gpu_cost_ranking_history', 'gpu_cost_ranking'), ('price_history', 'prices_current')
    ) as copy_of (table_name, original_name)  -- noqa: AL05
),

copied as (
    select
        copies.table_name,
        listed.column_name,
        listed.comment
    from copies
    inner join listed on copies.original_name = listed.table_name
    where listed.column_name is not null
        and not exists (
            select 1 from listed as own
            where own.table_name = copies.table_name and own.column_name = listed.column_name
        )
),

described as (
    select * from listed
    union all
    select * from copied
),

final as (
    select
        case
            when column_name is null
                then 'comment on table published."' || replace(table_name, '"', '""') || '"'
            else 'comment on column published."' || replace(table_name, '"', '""') || '"."'
                || replace(column_name, '"', '""') || '"'
        end || ' is ''' || replace(comment, '''', '''''') || '''' as statement
    from described
)

select * from final
