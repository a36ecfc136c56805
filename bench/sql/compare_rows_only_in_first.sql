-- bench/compare_published.py: rows of $first that $second lacks (EXCEPT ALL, so duplicates count), the columns
-- named in $left_out (a run's clocks) left out and `metrics` compared without the fit's wall_seconds, in rows
with

first_rows as (
    select columns(lambda c: not list_contains($left_out, c)) from query_table($first)
),

second_rows as (
    select columns(lambda c: not list_contains($left_out, c)) from query_table($second)
),

final as (
    select count(*) as row_count
    from (
        select * from first_rows
        except all
        select * from second_rows
    ) as only_in_first
)

select * from final
