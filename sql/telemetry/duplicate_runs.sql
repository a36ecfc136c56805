-- Rows sharing a run_id in one file (staging_file_rows): conflicting values (none is loaded, each rejected with
-- the lines of the group) or identical (the first by line is kept, the others skipped and dropped here).
-- The run_ids that repeat are found first (a count per run_id); only their rows are compared and ranked.
create or replace temp table staging_run_duplicates as
with keyed as not materialized (
    select _row_id, run_id, record_hash, source_line
    from staging_file_rows
    where run_id is not null
),

repeated as (
    select run_id from keyed group by run_id having count(*) > 1
),

repeated_rows as (
    select keyed.* from keyed semi join repeated using (run_id)
),

groups as (
    select
        run_id,
        count(distinct record_hash) as versions,  -- the values hashed
        string_agg(source_line::varchar, ', ' order by source_line) as lines
    from repeated_rows
    group by run_id
),

ranked as (
    select
        repeated_rows._row_id,
        groups.versions,
        groups.lines,
        row_number() over (
            partition by repeated_rows.run_id order by repeated_rows.source_line, repeated_rows._row_id
        ) as nth
    from repeated_rows
    inner join groups on repeated_rows.run_id = groups.run_id
),

final as (
    select
        _row_id,
        case when versions > 1 then 'conflict' else 'identical' end as duplicate,
        case when versions > 1
                then 'duplicate run_id in one file with conflicting values (lines ' || lines || '): none is loaded'
        end as rejected_reason
    from ranked
    where versions > 1 or nth > 1
)

select * from final;

delete from staging_file_rows
where _row_id in (select _row_id from staging_run_duplicates where duplicate = 'identical');

update staging_file_rows set rejected_reason = duplicates.rejected_reason
from staging_run_duplicates as duplicates
where staging_file_rows._row_id = duplicates._row_id and duplicates.duplicate = 'conflict';
