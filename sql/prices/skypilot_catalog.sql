-- The catalog as the offers SQL reads it: the 1-based line of each record (header = line 1) and the record
-- as read, as JSON (every column of the file, then the optional ones it lacks, as null).
-- `skypilot_columns` is staging.price_file with its row order (`_order`) and the missing optional columns.
create or replace temp view skypilot_catalog as
select
    * exclude (_order),
    row_number() over (order by _order) + 1                     as _line,
    to_json(struct_pack(*columns(* exclude (_order))))          as raw_values
from skypilot_columns
