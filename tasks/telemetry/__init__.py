"""Training telemetry: read (CSV, JSON Lines, Parquet), normalise to the contract, validate, store keyed by run_id."""
