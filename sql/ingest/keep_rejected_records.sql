-- The records as read of the rejected rows only, as the quarantine stores them (row key and raw_values, read by
-- sql/ingest/insert_rejected_rows.sql), kept apart so that the file as read can be dropped before the warehouse is
-- written (tasks/ingest/lifecycle.py). Only these two columns: a reader's view computes every column it is asked
-- for on every line before the join (10^6-line SkyPilot catalog: 2.0 s for all of them, 0.6 s for these two).
create or replace temp table staging_rejected_records as
select records._row_id, records.raw_values
from (select distinct _row_id from staging_file_failures) as failures
inner join staging_file_records as records on failures._row_id = records._row_id
