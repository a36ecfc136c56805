-- Records whose every contract cell is blank (the CSV readers skip lines blank in every cell; the fast path then
-- defers to them, which also keep a line blank only in the contract's cells, as a record that fails its checks).
with cells as (
    select coalesce(*columns(* exclude (_row_id, source_line, raw_values))) as first_cell
    from staging_file_records
)

select count(*) from cells where first_cell is null
