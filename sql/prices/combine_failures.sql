-- One failed_check per rejected price row. The adapter's own reason, where it gave one, is the cause (its
-- missing price or GPU would only repeat it as suite failures); otherwise the suite's checks. A storage volume
-- price (record_kind 'storage') is not an instance price: only its own checks (the adapter's reason) apply. A new
-- offer far below its GPU's median (sql/prices/checked_rows.sql) gets the figures behind that check added.
create or replace temp table staging_file_failures as
with staged as (
    select _row_id, rejected_reason, record_kind, per_gpu_price_doubt from staging_file_rows
),

suite as (
    select * from staging_suite_failures
),

final as (
    select
        staged._row_id,
        case when staged.record_kind = 'storage' then staged.rejected_reason
            else coalesce(
                    staged.rejected_reason, suite.failed_check || coalesce(': ' || staged.per_gpu_price_doubt, '')
                )
        end as failed_check
    from staged
    left join suite on staged._row_id = suite._row_id
    where staged.rejected_reason is not null
        or (suite.failed_check is not null and staged.record_kind is distinct from 'storage')
)

select * from final
