-- The telemetry file as the lifecycle reads it: row key, 1-based line (CSV; header = line 1) or record
-- number (Parquet), every cell as text and the record as JSON (`telemetry_columns`: staging_telemetry_file
-- with its row order `_order`, the rowid of the table read in file order, made by
-- tasks/telemetry/readers.py::read_into_duckdb). No sort: the rowid less the table's first (rowids of a table
-- made inside a transaction start at a large base) is the record's place in the file.
create or replace temp table staging_telemetry_records as
with first_record as (
    select min(_order) as first_order from telemetry_columns
),

final as (
    select
        _order - first_order                                        as _row_id,
        _order - first_order + 1 + $line_offset                     as _source_line,
        * exclude (_order, first_order)
    from telemetry_columns
    cross join first_record
)

select * from final
