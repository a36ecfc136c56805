-- Whether DuckDB keeps rows in the order a statement produced them (restored after an ingest).
select current_setting('preserve_insertion_order') as preserve_insertion_order
