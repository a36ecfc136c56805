-- The file's records when a reader (or the hand-over from a worker) made them a table.
drop table if exists staging_file_records
