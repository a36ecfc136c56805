-- A price file in CSV form, every column as text, in file order (`staging_price_file`; tasks/prices/adapter.py).
-- Fixed dialect (comma, double quotes), as the catalogs are written; no type sniffing.
create or replace temp table staging_price_file as
select *
from read_csv(
        $path, header = true, all_varchar = true, delim = ',', quote = '"', escape = '"', skip = $skip,
        strict_mode = true, null_padding = false
    )
