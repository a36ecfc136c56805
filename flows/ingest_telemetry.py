"""The `ingest_telemetry` flow: every configured (or given) telemetry file into the warehouse, then the
feature table `features.training_runs` rebuilt from the current runs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.retries import io_task_options
from tasks.features import refresh_feature_table
from tasks.ingest.registry import FileOutcome
from tasks.reference import load_reference_tables, read_aliases
from tasks.sources import configured_telemetry_paths
from tasks.summary import outcomes_markdown
from tasks.telemetry.ingest import ingest_telemetry_file, quarantine_unreadable
from tasks.telemetry.normalise import load_vocabulary
from tasks.warehouse import warehouse


@task(**io_task_options("ingest-telemetry-file"))
def ingest_telemetry_file_task(
    con: duckdb.DuckDBPyConnection, path: Path, aliases: pl.DataFrame, ingested_at: datetime, vocabulary: dict
) -> FileOutcome:
    return ingest_telemetry_file(con, path, aliases, ingested_at, vocabulary)


@task(name="refresh-feature-table", cache_policy=NO_CACHE)
def refresh_feature_table_task(con: duckdb.DuckDBPyConnection) -> int:
    return refresh_feature_table(con)


@flow(name="ingest_telemetry", log_prints=True)
def ingest_telemetry(paths: list[Path] | None = None) -> list[FileOutcome]:
    paths = [Path(p) for p in paths] if paths else configured_telemetry_paths()
    ingested_at = datetime.now(UTC)
    with warehouse() as con:
        load_reference_tables(con)
        aliases = read_aliases()
        vocabulary = load_vocabulary()
        outcomes = []
        for path in paths:
            try:
                outcomes.append(ingest_telemetry_file_task(con, path, aliases, ingested_at, vocabulary))
            except OSError as error:  # still failing after the task's retries: tonight without this file
                outcomes.append(quarantine_unreadable(con, path, error, ingested_at))
        feature_rows = refresh_feature_table_task(con)
    report = outcomes_markdown("Telemetry ingest", outcomes) + f"\n\nfeatures.training_runs: {feature_rows} rows\n"
    create_markdown_artifact(report, key="ingest-telemetry-summary", description="Telemetry ingest summary")
    print(report)
    return outcomes
