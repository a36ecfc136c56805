-- The file's records when a reader made them a view over the file as read.
drop view staging_file_records
