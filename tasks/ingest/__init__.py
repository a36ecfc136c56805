"""The one ingest lifecycle every dataset shares (lifecycle.py: stage -> apply), the landing zone of every ingested
unit's bytes (landing.py), the file registry (registry.py), quarantine (quarantine.py) and validation against the
suites in expectations/ (validation.py).

A dataset is a `lifecycle.Dataset` (`tasks.prices.ingest.price_dataset`, `tasks.telemetry.ingest.telemetry_dataset`);
`lifecycle.apply(con, dataset, Unit(source), ingested_at, limits)` stages a file inline and applies it (the
datasets' entry points `tasks.prices.ingest.ingest_price_file`, `tasks.telemetry.ingest.ingest_telemetry_file` do
that for one file). Staged on a worker instead, `lifecycle.stage_unit` stages a file with no warehouse connection
and hands its tables over as Parquet to the same `apply` (flows/ingest_runner.py runs the workers on a Prefect task
runner: threads or Dask).
"""
