"""One night's publish as a plain function: rank every offer, build the published database, chart and
summary. The `publish` flow (flows/publish.py) wraps it; tests call it directly."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import duckdb
import polars as pl

from tasks.publishing.artifacts import summary_markdown, top_offers, write_chart
from tasks.publishing.database import PublishedFile, build_published
from tasks.publishing.model_versions import read_model_versions
from tasks.ranking.rank import RankingResult, ThroughputModel, rank_offers
from tasks.reference import load_reference_tables
from tasks.settings import load_config, paths
from tasks.warehouse import query


@dataclass
class PublishOutcome:
    ranking: RankingResult
    published: PublishedFile
    top: pl.DataFrame
    chart: Path | None
    markdown: str
    notes: list[str] = field(default_factory=list)


def chart_path(published: Path) -> Path:
    """Beside the published database."""
    return published.with_name("gpu_cost_ranking.png")


def publish_night(
    con: duckdb.DuckDBPyConnection,
    champion: ThroughputModel | None,
    publish_date: date,
    published_at: datetime,
    target: Path | None = None,
    tracking_uri: str | None = None,
) -> PublishOutcome:
    target = target or paths().published
    config = load_config("ranking")
    load_reference_tables(con)
    ranking = rank_offers(con, champion, publish_date, published_at, config=config)
    versions, note = read_model_versions(tracking_uri or paths().mlflow_tracking_uri)
    notes = [note] if note else []
    published = build_published(con, target, versions, int(config["spot"]["history_window_days"]))
    top = top_offers(con, publish_date, int(config["publish"]["top_offers_per_workload"]))
    points = query(con, "marts/ranked_points", {"publish_date": publish_date}).pl()
    chart = write_chart(points, chart_path(target), f"USD per million tokens vs hours to finish, {publish_date}")
    if chart is None:
        notes.append("no ranked offers tonight, so no chart")
    markdown = summary_markdown(ranking, published, top, chart, notes)
    return PublishOutcome(ranking, published, top, chart, markdown, notes)
