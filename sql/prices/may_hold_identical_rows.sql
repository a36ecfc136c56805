-- Whether the staged rows may hold identical rows (equal in every value but row key and line): fewer distinct
-- row hashes than rows. One hash per row is far cheaper than grouping by every column; only then does
-- collapse_duplicates.sql group exactly (two different rows with equal hashes just cost that exact pass).
select count(*) > count(distinct hash(*columns(* exclude (_row_id, source_line)))) as may_hold_identical_rows
from staging_file_rows
