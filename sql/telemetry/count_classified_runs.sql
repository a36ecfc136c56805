-- Runs per action (new, newer, unchanged, older) in the temporary table made by classify_runs.sql.
with classified as (
    select * from temp.classified_runs
),

final as (
    select action, count(*) as runs
    from classified
    group by action
)

select * from final order by action
