-- The CSV form's lines with their 1-based line number: 5 preamble lines and the header come first.
create or replace temp view offer_lines as
select row_number() over (order by rowid) + 6 as _line, * from staging_price_file
