"""The telemetry contract (README.md, "Data contracts"): its columns, vocabularies and bounds (schema.py), its one
normaliser, the DuckDB SQL of sql/contract/ run on a connection the caller gives (normalise.py), the `parallelism`
text read as parallel sizes (parallelism.py), and the feature rows built from normalised runs (features.py).
Ingest, training, `gpucost predict` and the registered model all read telemetry through it; it needs no
warehouse."""
