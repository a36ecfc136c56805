-- The catalog as the offers SQL reads it: the 1-based line of each record (header = line 1) and the record
-- as read (every column of the file, then the optional ones it lacks, as null), a STRUCT that the quarantine
-- casts to JSON (sql/ingest/insert_rejected_rows.sql) for the rejected offers only: as JSON text it was built for
-- every line the quarantine's join read (10^6 lines: 0.87 s -> 0.21 s for 18,000 rejected offers; the same text).
-- `skypilot_columns` is staging_price_file with its row order (`_order`: the rowid of the table read in file
-- order; rowids of a table made inside a transaction start at a large base, hence the minimum subtracted) and the
-- missing optional columns.
create or replace temp view skypilot_catalog as
select
    * exclude (_order),
    _order - (select min(numbered._order) from skypilot_columns as numbered) + 2 as _line,
    struct_pack(*columns(* exclude (_order))) as raw_values
from skypilot_columns
