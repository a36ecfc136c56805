-- The failing (row, expectation) pairs of the part of the suite just checked (`part_check_rows_found`: one
-- filter per expectation, built by tasks/ingest/validation.py from the suite's kwargs).
create or replace temp table staging_part_check_rows as
select * from part_check_rows_found;

-- the view was made from a Python relation, which DuckDB stores in the warehouse: not kept past its one use
drop view part_check_rows_found;
