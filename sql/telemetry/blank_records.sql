-- Records whose every cell is blank (the CSV readers skip such lines; the fast path then defers to them).
with cells as (
    select coalesce(*columns(* exclude (_row_id, _source_line, _raw_values))) as first_cell
    from staging_telemetry_records
)

select count(*) from cells where first_cell is null
