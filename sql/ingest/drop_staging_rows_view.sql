-- The file's staged rows when the dataset made them a view (e.g. prices: the normalised rows with the columns
-- measured against the warehouse joined where they are read, sql/prices/checked_rows.sql); its tables are
-- dropped after it (sql/ingest/drop_staging.sql).
drop view staging_file_rows
