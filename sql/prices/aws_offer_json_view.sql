-- The JSON form's price dimensions (`offer_dimensions`, registered by tasks/providers/aws.py).
create or replace temp table staging_price_file as select * from offer_dimensions;

create or replace temp view offer_lines as
select source_line as _line, * exclude (source_line) from staging_price_file
