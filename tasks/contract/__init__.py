"""The telemetry contract (README.md, "Data contracts"): its columns, vocabularies and bounds (schema.py) and its
one normaliser, DuckDB SQL (sql/contract/) run on a connection the caller gives (normalise.py). Ingest, training,
`gpucost predict` and the registered model all read telemetry through it; it needs no warehouse."""
