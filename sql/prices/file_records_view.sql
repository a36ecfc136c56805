-- The adapter records of the file being ingested, under the name sql/prices/normalise.sql reads.
create or replace temp view file_records as select * from staging_file_records
