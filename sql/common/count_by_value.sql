-- Rows of the table named $table per value of its column $column, most frequent first (ties by value):
-- e.g. the file's rejected rows per failed check (staging_file_failures, failed_check), the telemetry
-- runs per action (temp.classified_runs, action). Names are bound, not spliced: query_table() takes the
-- table's name and COLUMNS() the column's, matched whole.
with source as (
    select columns('^' || $column || '$') as value from query_table($table)
),

final as (
    select value, count(*) as row_count
    from source
    group by value
)

select * from final order by row_count desc, value asc
