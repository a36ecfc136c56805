-- Keep (true) or free (false) the order of the rows a statement writes; free, DuckDB writes on every thread.
set preserve_insertion_order = $preserve
