-- The telemetry file as the lifecycle reads it (staging_file_records), a view over the file as read: row key,
-- 1-based line (CSV; header = line 1) or record number (Parquet), the record as JSON and the contract's cells
-- as text (`telemetry_columns`: staging_telemetry_file with its row order `_order`, the rowid of the table
-- read in file order, and `_line_offset`, made by tasks/telemetry/readers.py::read_into_duckdb). A view: the
-- cells and the JSON are computed where they are read (normalisation, quarantine), never stored twice. No sort:
-- the rowid less the table's first (rowids of a table made inside a transaction start at a large base) is the
-- record's place in the file. The row key is the rowid itself: a join on it (the quarantine's, of the few rejected
-- rows) reaches the table's scan as a filter, so the JSON is built for those rows only (10^6 rows: 2.8 s -> 0.2 s).
create or replace temp view staging_file_records as
with first_record as (
    select min(_order) as first_order from telemetry_columns
),

final as (
    select
        _order as _row_id,
        _order - first_order + 1 + _line_offset as source_line,
        * exclude (_order, first_order, _line_offset)
    from telemetry_columns
    cross join first_record
)

select * from final
