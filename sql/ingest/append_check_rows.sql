-- The part of the suite just checked (and cross-checked with GX) joins the file's failing pairs.
insert into staging_suite_check_rows (_row_id, check_order, failed_check)
select _row_id, check_order, failed_check from staging_part_check_rows;

drop table staging_part_check_rows;
