"""The `ingest_telemetry` flow: every configured (or given) telemetry file and MLflow source into the warehouse,
then the feature table `features.training_runs` rebuilt from the current runs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.ingest_runner import ingest_files
from tasks import config_files
from tasks.contract.features import refresh_feature_table
from tasks.contract.normalise import load_vocabulary
from tasks.contract.schema import TelemetryValidation
from tasks.ingest.config import IngestLimits
from tasks.ingest.landing import apply_retention, landing_report, say_landed_problems
from tasks.ingest.landing import recover as recover_landing
from tasks.ingest.quarantine import quarantine_file
from tasks.ingest.registry import FileOutcome
from tasks.reference import ReferenceFiles, load_reference_tables, read_aliases, reference_paths
from tasks.sources import configured_telemetry_paths
from tasks.summary import outcomes_markdown
from tasks.telemetry.config import MlflowTelemetry
from tasks.telemetry.ingest import DATASET, telemetry_dataset, telemetry_source
from tasks.telemetry.mlflow_ingest import configured_mlflow_sources, ingest_mlflow_source
from tasks.telemetry.mlflow_source import MlflowMappingError, MlflowSource, redact_uri
from tasks.warehouse import warehouse


@task(name="ingest-mlflow-runs", cache_policy=NO_CACHE)
def ingest_mlflow_source_task(
    con: duckdb.DuckDBPyConnection, source: MlflowSource, aliases: pl.DataFrame, ingested_at: datetime,
    vocabulary: dict[str, Any], validation: TelemetryValidation, settings: MlflowTelemetry, limits: IngestLimits,
    rescan: bool,
) -> list[FileOutcome]:
    return ingest_mlflow_source(con, source, aliases, ingested_at, vocabulary=vocabulary, validation=validation,
                                settings=settings, limits=limits, rescan=rescan)


def mlflow_unreachable(
    con: duckdb.DuckDBPyConnection, source: MlflowSource, error: BaseException, ingested_at: datetime
) -> FileOutcome:
    """A source that cannot be read tonight (server down, unknown experiment): recorded, and the night goes on."""
    name = f"mlflow:{redact_uri(source.tracking_uri)}#{','.join(source.experiments)}"
    cause = " ".join(str(error).split())[:400] or type(error).__name__
    outcome = FileOutcome(DATASET, name, "", "quarantined", format=f"mlflow/{source.mapping}",
                          error=f"cannot read MLflow runs: {cause}")
    quarantine_file(con, DATASET, name, None, outcome.error or "", ingested_at)
    return outcome


@task(name="refresh-feature-table", cache_policy=NO_CACHE)
def refresh_feature_table_task(con: duckdb.DuckDBPyConnection, reference: ReferenceFiles) -> int:
    return refresh_feature_table(con, reference)


@flow(name="ingest_telemetry", log_prints=True)
def ingest_telemetry(
    paths: list[Path] | None = None, mlflow: list[MlflowSource] | None = None, rescan: bool = False
) -> list[FileOutcome]:
    """Given files, or given MLflow sources, or (neither) everything config/sources.toml names."""
    from mlflow.exceptions import MlflowException

    if paths or mlflow:
        paths, sources = [Path(p) for p in paths or []], list(mlflow or [])
    else:
        configured = config_files.sources()
        paths, sources = configured_telemetry_paths(configured), configured_mlflow_sources(configured)
    ingested_at = datetime.now(UTC)
    settings, telemetry = config_files.settings(), config_files.telemetry()  # read once, passed to the tasks
    resources = config_files.resources(settings)
    reference, files = settings.reference, reference_paths(settings.reference)
    limits = settings.ingest.limits(resources.home)
    mlflow_settings = config_files.mlflow_telemetry()
    with warehouse(resources.warehouse) as con:
        recover_landing(con)  # what a killed ingest left in the landing zone
        load_reference_tables(con, files)
        aliases = read_aliases(files["gpu_aliases"])
        vocabulary = load_vocabulary(telemetry)
        dataset = telemetry_dataset(aliases, vocabulary, telemetry.validation)
        # said now; a source ingested below lands its unit again from its original bytes
        landing_problems = say_landed_problems(con, dataset.name, "ingest telemetry")
        outcomes = ingest_files(con, dataset, [telemetry_source(p) for p in paths], ingested_at, "ingest telemetry",
                                settings, resources)
        for source in sources:
            try:
                outcomes.extend(ingest_mlflow_source_task(con, source, aliases, ingested_at, vocabulary,
                                                          telemetry.validation, mlflow_settings, limits, rescan))
            except (MlflowMappingError, MlflowException, OSError) as error:
                outcomes.append(mlflow_unreachable(con, source, error, ingested_at))
        apply_retention(con, settings.ingest.landing_retention_days, ingested_at)
        feature_rows = refresh_feature_table_task(con, reference)
    report = (landing_report(landing_problems) + outcomes_markdown("Telemetry ingest", outcomes)
              + f"\n\nfeatures.training_runs: {feature_rows} rows\n")
    create_markdown_artifact(report, key="ingest-telemetry-summary", description="Telemetry ingest summary")
    print(report)
    return outcomes
