"""The one ingest lifecycle every dataset shares (lifecycle.py), the landing zone of every ingested unit's bytes
(landing.py), the file registry (registry.py), quarantine (quarantine.py) and validation against the suites in
expectations/ (validation.py).

A dataset supplies a `lifecycle.Dataset` (tasks/prices/ingest.py, tasks/telemetry/ingest.py); callers use
`lifecycle.ingest_file(con, dataset, FileSource(path, provider, format), ingested_at)`, or the datasets'
own entry points (`tasks.prices.ingest.ingest_price_file`, `tasks.telemetry.ingest.ingest_telemetry_file`).
For parallel ingest, `lifecycle.stage_file` stages a file with no warehouse connection and
`lifecycle.apply_staged` is the writer's part (flows/ingest_runner.py runs them on a Prefect task runner:
its thread pool by default, or Dask).
"""
