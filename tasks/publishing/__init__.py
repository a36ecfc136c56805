"""Publishing: the read-only DuckDB file users query, and the artifacts people look at."""
