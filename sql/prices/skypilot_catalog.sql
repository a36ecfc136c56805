-- The catalog as the offers SQL reads it: the 1-based line of each record (header = line 1) and the record
-- as read, as JSON (every column of the file, then the optional ones it lacks, as null).
-- `skypilot_columns` is staging_price_file with its row order (`_order`: the rowid of the table read in file
-- order; rowids of a table made inside a transaction start at a large base, hence the minimum subtracted) and the
-- missing optional columns.
create or replace temp view skypilot_catalog as
select
    * exclude (_order),
    _order - (select min(numbered._order) from skypilot_columns as numbered) + 2 as _line,
    to_json(struct_pack(*columns(* exclude (_order)))) as raw_values
from skypilot_columns
