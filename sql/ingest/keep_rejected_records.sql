-- The records as read of the rejected rows only (the quarantine stores them with their reason), kept apart so that
-- the file as read can be dropped before the warehouse is written (tasks/ingest/lifecycle.py). The join on the row
-- key reaches the records' scan as a filter: a reader's JSON or STRUCT is built for these rows only.
create or replace temp table staging_rejected_records as
select records.*
from (select distinct _row_id from staging_file_failures) as failures
inner join staging_file_records as records on failures._row_id = records._row_id
