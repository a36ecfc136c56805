-- The telemetry file as the lifecycle reads it: row key, 1-based line (CSV; header = line 1) or record
-- number (Parquet), every cell as text and the record as JSON (`telemetry_columns`: staging.telemetry_file
-- in file order (`_order`), made by tasks/telemetry/readers.py::read_into_duckdb).
create or replace table staging.telemetry_records as
select
    row_number() over (order by _order) - 1                     as _row_id,
    row_number() over (order by _order) + $line_offset          as _source_line,
    * exclude (_order)
from telemetry_columns
