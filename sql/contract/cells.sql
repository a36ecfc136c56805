-- The contract's cells of the telemetry records (staging_file_records), every contract column present (null where
-- the records have none: `telemetry_contract_columns`, an empty table of them registered by
-- tasks/contract/normalise.py, read by name beside the records): text cells trimmed, the others as read (a plain
-- number or timestamp has nothing to trim; any other cell is looked up as read, trimmed by the look-up). A view: read
-- by the spellings query and the normalisation (sql/contract/normalised_runs.sql).
create or replace temp view telemetry_cells as
with records as (
    select * from telemetry_contract_columns
    union all by name
    select * exclude (raw_values) from staging_file_records
),

final as (
    -- every cell as read; the free-text cells trimmed (the others are read, or looked up, by the normalisation)
    select
        * replace (
            telemetry_text(run_id) as run_id,
            telemetry_text(gpu) as gpu,
            telemetry_text(model_name) as model_name,
            telemetry_text(parallelism) as parallelism,
            telemetry_text(framework) as framework,
            telemetry_text(optimizer) as optimizer,
            telemetry_text(source) as source,
            telemetry_text(quality_flag) as quality_flag
        )
    from records
)

select * from final
