-- The part of the suite just checked (and cross-checked with GX) joins the file's failing pairs.
insert into staging.suite_check_rows (_row_id, check_order, failed_check)
select _row_id, check_order, failed_check from staging.part_check_rows;

drop table staging.part_check_rows;
