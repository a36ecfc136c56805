-- One failed_check per rejected telemetry row: a conflicting duplicate's reason first, then the suite's
-- checks; values that could not be read are named after the checks ("... [num_gpus='x']").
create or replace temp table staging_file_failures as
with staged as (
    select _row_id, rejected_reason, unparsed_fields from staging_file_rows
),

suite as (
    select * from staging_suite_failures
),

combined as (
    select
        staged._row_id,
        staged.unparsed_fields,
        concat_ws('; ', staged.rejected_reason, suite.failed_check) as checks
    from staged
    left join suite on staged._row_id = suite._row_id
    where staged.rejected_reason is not null or suite.failed_check is not null
),

final as (
    select
        _row_id,
        case when unparsed_fields is not null then checks || ' [' || unparsed_fields || ']' else checks end
            as failed_check
    from combined
)

select * from final
