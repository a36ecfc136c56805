"""The `ingest_prices` flow: every configured (or given) price file through its adapter into the warehouse."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact

from flows.ingest_runner import ingest_in_parallel
from flows.retries import io_task_options, with_retries
from tasks import config_files, progress
from tasks.ingest.config import IngestLimits
from tasks.ingest.landing import apply_retention
from tasks.ingest.landing import recover as recover_landing
from tasks.ingest.registry import FileOutcome
from tasks.prices.config import PriceValidation
from tasks.prices.ingest import PriceDataset, PriceSource, ingest_price_file, quarantine_unreadable
from tasks.reference import load_reference_tables, read_aliases, reference_paths
from tasks.sources import configured_price_sources
from tasks.summary import outcome_line, outcomes_markdown
from tasks.warehouse import warehouse


@task(**io_task_options("ingest-price-file"))
def ingest_price_file_task(
    con: duckdb.DuckDBPyConnection, source: PriceSource, aliases: pl.DataFrame, ingested_at: datetime,
    validation: PriceValidation, reference_dir: Path, limits: IngestLimits,
) -> FileOutcome:
    return ingest_price_file(con, source, aliases, ingested_at, validation=validation, reference_dir=reference_dir,
                             limits=limits)


@flow(name="ingest_prices", log_prints=True)
def ingest_prices(sources: list[PriceSource] | None = None) -> list[FileOutcome]:
    sources = sources if sources is not None else configured_price_sources(config_files.sources())
    settings = config_files.settings()  # read once, passed to the tasks
    resources = config_files.resources(settings)
    validation, reference = settings.validation.prices, reference_paths(settings.reference)
    limits = settings.ingest.limits(resources.home)
    ingest_file = with_retries(ingest_price_file_task, settings.prefect)
    landing_retention = settings.ingest.landing_retention_days
    runner = settings.ingest.runner
    ingested_at = datetime.now(UTC)
    with warehouse(resources.warehouse) as con:
        recover_landing(con)  # what a killed ingest left in the landing zone
        load_reference_tables(con, reference)
        aliases = read_aliases(reference["gpu_aliases"])
        if runner.parallel:  # read/stage/validate on the runner's workers, this flow the one writer
            outcomes = ingest_in_parallel(
                con, PriceDataset(aliases, validation, resources.reference), sources, ingested_at, runner,
                lambda source, error: quarantine_unreadable(con, source, error, ingested_at), "ingest prices",
                settings, resources,
            )
        else:
            outcomes = []
            for number, source in enumerate(sources, start=1):
                try:
                    outcomes.append(ingest_file(con, source, aliases, ingested_at, validation, resources.reference,
                                                limits))
                except OSError as error:  # still failing after the task's retries: tonight without this file
                    outcomes.append(quarantine_unreadable(con, source, error, ingested_at))
                progress.step("ingest prices: file %d of %d: %s", number, len(sources), outcome_line(outcomes[-1]))
        apply_retention(con, landing_retention, ingested_at)
    report = outcomes_markdown("Price ingest", outcomes)
    create_markdown_artifact(report, key="ingest-prices-summary", description="Price ingest summary")
    print(report)
    return outcomes
