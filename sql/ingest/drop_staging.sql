-- The staged tables of the file just ingested (they live only inside its transaction).
drop table if exists staging.file_records;
drop table if exists staging.file_rows;
drop table if exists staging.suite_failures;
drop table if exists staging.file_failures;
