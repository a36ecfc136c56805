-- The rejected rows' records become the unit's staging_file_records (read by sql/ingest/insert_rejected_rows.sql).
alter table staging_rejected_records rename to staging_file_records
