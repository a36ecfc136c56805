"""The `ingest_prices` flow: every configured (or given) price file through its adapter into the warehouse."""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from flows.ingest_runner import ingest_files
from tasks import config_files
from tasks.ingest.landing import apply_retention, landing_report, say_landed_problems
from tasks.ingest.landing import recover as recover_landing
from tasks.ingest.registry import FileOutcome
from tasks.prices.ingest import PriceSource, price_dataset
from tasks.reference import load_reference_tables, read_aliases, reference_paths
from tasks.sources import configured_price_sources
from tasks.summary import outcomes_markdown
from tasks.warehouse import warehouse


@flow(name="ingest_prices", log_prints=True)
def ingest_prices(sources: list[PriceSource] | None = None) -> list[FileOutcome]:
    sources = sources if sources is not None else configured_price_sources(config_files.sources())
    settings = config_files.settings()  # read once, passed to the tasks
    resources = config_files.resources(settings)
    reference = reference_paths(settings.reference)
    ingested_at = datetime.now(UTC)
    with warehouse(resources.warehouse) as con:
        recover_landing(con)  # what a killed ingest left in the landing zone
        load_reference_tables(con, reference)
        dataset = price_dataset(read_aliases(reference["gpu_aliases"]), settings.validation.prices, resources.reference)
        # said now; a source ingested below lands its unit again from its original bytes
        landing_problems = say_landed_problems(con, dataset.name, "ingest prices")
        outcomes = ingest_files(con, dataset, sources, ingested_at, "ingest prices", settings, resources)
        apply_retention(con, settings.ingest.landing_retention_days, ingested_at)
    report = landing_report(landing_problems) + outcomes_markdown("Price ingest", outcomes)
    create_markdown_artifact(report, key="ingest-prices-summary", description="Price ingest summary")
    print(report)
    return outcomes
