-- Rows of one published table or view ($relation: 'published.<name>'), for the run summary.
select count(*) as row_count from query_table($relation)
