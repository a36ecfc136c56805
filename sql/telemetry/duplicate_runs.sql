-- Rows sharing a run_id in one file (staging.normalised_runs): conflicting values (none is loaded, each
-- rejected with the lines of the group) or identical (the first by line is kept, the others skipped).
create or replace table staging.run_duplicates as
with keyed as (
    select _row_id, run_id, record_hash, source_line
    from staging.normalised_runs
    where run_id is not null
),

groups as (
    select
        run_id,
        count(*)                                                   as rows_in_file,
        count(distinct record_hash)                                as versions,
        string_agg(source_line::varchar, ', ' order by source_line) as lines
    from keyed
    group by run_id
    having count(*) > 1
),

ranked as (
    select
        keyed._row_id,
        groups.versions,
        groups.lines,
        row_number() over (partition by keyed.run_id order by keyed.source_line, keyed._row_id) as nth
    from keyed
    inner join groups on keyed.run_id = groups.run_id
),

final as (
    select
        _row_id,
        case when versions > 1 then 'conflict' else 'identical' end as duplicate,
        case when versions > 1
             then 'duplicate run_id in one file with conflicting values (lines ' || lines || '): none is loaded'
        end                                                           as rejected_reason
    from ranked
    where versions > 1 or nth > 1
)

select * from final
