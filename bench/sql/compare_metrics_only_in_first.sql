-- bench/compare_published.py: `metrics` values of $first that $second lacks, without the fit's wall_seconds (a
-- clock), in rows
with

final as (
    select count(*) as row_count
    from (
        select json_remove(metrics::json, '$.wall_seconds') as metrics from query_table($first)
        except all
        select json_remove(metrics::json, '$.wall_seconds') as metrics from query_table($second)
    ) as only_in_first
)

select * from final
