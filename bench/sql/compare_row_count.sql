-- bench/compare_published.py: the rows of one table or view ($relation: 'a.name' or 'b.name'), in rows
select count(*) as row_count from query_table($relation)
