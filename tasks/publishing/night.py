"""One night's publish as a plain function: rank every offer, build the published database, chart and
summary. The `publish` flow (flows/publish.py) wraps it; tests call it directly."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import duckdb
import polars as pl

from tasks.publishing.artifacts import CLOUD_LOG10_RESOLUTION, summary_markdown, top_offers, write_chart
from tasks.publishing.database import PublishedFile, build_published
from tasks.publishing.model_versions import read_model_versions
from tasks.publishing.ownership import (
    PNG_MAGIC,
    ForeignTargetError,
    check_database_target,
    check_file_target,
    check_parquet_target,
    remember_written,
)
from tasks.publishing.parquet import ParquetSnapshot, export_parquet, parquet_root
from tasks.ranking.config import Ranking, RankingCompute
from tasks.ranking.rank import RankingResult, ThroughputModel, rank_offers
from tasks.reference import ReferenceFiles, load_reference_tables, reference_paths
from tasks.settings import Resources
from tasks.warehouse import memory_capped, query, row_order_free

# DuckDB's cap on the warehouse connection while it waits for the Parquet copy (it runs no query meanwhile).
IDLE_WAREHOUSE_MEMORY_LIMIT = "64MB"


@dataclass
class PublishOutcome:
    ranking: RankingResult
    published: PublishedFile
    top: pl.DataFrame
    chart: Path | None
    markdown: str
    notes: list[str] = field(default_factory=list)
    parquet: ParquetSnapshot | None = None


def chart_path(published: Path) -> Path:
    """Beside the published database."""
    return published.with_name("gpu_cost_ranking.png")


def check_targets(published: Path, parquet: Path, home: Path) -> None:
    """Every file and folder publish writes is absent or gpucost's (tasks/publishing/ownership.py), else
    ForeignTargetError naming it, before anything is written."""

    check_database_target(home, published)
    check_file_target(home, chart_path(published), "the ranking chart", PNG_MAGIC)
    check_parquet_target(parquet)


@contextmanager
def duckdb_limits(con: duckdb.DuckDBPyConnection, compute: RankingCompute, home: Path) -> Iterator[None]:
    """Cap DuckDB's memory for the block (config/ranking.toml [compute]) with a spill folder in the state folder `home`,
    so 10^7 ranking rows spill to disk instead of exhausting RAM."""
    with memory_capped(con, compute.memory_limit, home / compute.temp_directory):
        yield


def publish_night(
    con: duckdb.DuckDBPyConnection,
    champion: ThroughputModel | None,
    publish_date: date,
    published_at: datetime,
    resources: Resources,
    *,
    ranking: Ranking,
    reference: ReferenceFiles,
    workloads: pl.DataFrame,
) -> PublishOutcome:
    """Publish into `resources.published` (the model versions from `resources.tracking_uri`); `ranking`,
    `reference` (config/ranking.toml, config/settings.toml [reference]) and `workloads` (load_workloads' rows) as
    the entry point loaded them."""
    target, home, config = resources.published, resources.home, ranking
    # before any work: nothing we did not make is replaced
    check_targets(target, parquet_root(config.publish, home), home)
    load_reference_tables(con, reference_paths(reference))
    versions, note = read_model_versions(resources.tracking_uri)
    notes = [note] if note else []
    with duckdb_limits(con, config.compute, home):
        result = rank_offers(con, champion, publish_date, published_at, workloads=workloads, config=config,
                             gpu_specs_file=reference.gpu_specs)
        with row_order_free(con):
            published = build_published(con, target, versions, config.spot.history_window_days, home)
        top = top_offers(con, publish_date, config.publish.top_offers_per_workload)
        points = query(con, "marts/ranked_points",
                       {"publish_date": publish_date, "cell_log10": CLOUD_LOG10_RESOLUTION}).pl()
    parquet = None
    spill = home / config.compute.temp_directory
    # The Parquet copy reads the published file on a connection of its own, under its own cap: meanwhile the
    # warehouse connection gives back the blocks it still caches (up to its cap), which would add to the copy's.
    with memory_capped(con, IDLE_WAREHOUSE_MEMORY_LIMIT, spill):
        try:
            spill.mkdir(parents=True, exist_ok=True)
            parquet = export_parquet(published.path, parquet_root(config.publish, home), published_at,
                                     config.publish.parquet_snapshots_kept,
                                     {"memory_limit": config.publish.parquet_memory_limit,
                                      "threads": config.publish.parquet_threads, "temp_directory": str(spill)})
        except (OSError, duckdb.Error, ForeignTargetError) as error:
            # the database users query is already in place: a shared folder that is down costs only the Parquet copy
            notes.append(f"Parquet copy of the published tables not written: {error}")
    chart = write_chart(points, chart_path(target), f"USD per million tokens vs hours to finish, {publish_date}")
    if chart is None:
        notes.append("no ranked offers tonight, so no chart")
    else:
        remember_written(home, chart)
    markdown = summary_markdown(result, published, top, chart, notes)
    if parquet is not None:
        markdown += f"\nParquet snapshot for other readers: {parquet.path} (pointer {parquet.root / 'LATEST'})\n"
    return PublishOutcome(result, published, top, chart, markdown, notes, parquet)
