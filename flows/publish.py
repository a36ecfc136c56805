"""The `publish` flow: rank every offer for every workload with the champion model and publish the
database users query (atomically), with a table artifact, a markdown summary and a chart."""

from __future__ import annotations

from datetime import UTC, date, datetime

import polars as pl
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from tasks import config_files
from tasks.model.contract_rows import ContractFeatures
from tasks.model.predict import load_champion
from tasks.publishing.night import PublishOutcome, publish_night
from tasks.ranking.config import Ranking
from tasks.ranking.rank import ThroughputModel
from tasks.ranking.workloads import load_workloads
from tasks.reference import ReferenceFiles
from tasks.report.page import report_path, write_report
from tasks.settings import Resources
from tasks.stores import mlflow_problem
from tasks.warehouse import warehouse


@task(name="load-champion", cache_policy=NO_CACHE)
def load_champion_task(tracking_uri: str, features: ContractFeatures) -> ThroughputModel | None:
    damaged = mlflow_problem(tracking_uri)
    if damaged is not None:  # no model tonight: every row says why (read_model_versions notes the file)
        print(damaged.message)
        return None
    return load_champion(tracking_uri, features)


@task(name="publish-night", cache_policy=NO_CACHE)
def publish_night_task(champion: ThroughputModel | None, publish_date: date, published_at: datetime,
                       resources: Resources, ranking: Ranking, reference: ReferenceFiles,
                       workloads: pl.DataFrame) -> PublishOutcome:
    with warehouse(resources.warehouse) as con:
        return publish_night(con, champion, publish_date, published_at, resources, ranking=ranking,
                             reference=reference, workloads=workloads)


@task(name="write-report", cache_policy=NO_CACHE)
def write_report_task(resources: Resources, workloads: pl.DataFrame) -> str:
    """The offers page from the database just published; a page that cannot be written costs only the page."""
    import duckdb

    try:
        written = write_report(resources.published, report_path(resources.home), workloads)
    except (OSError, duckdb.Error) as error:
        return f"offers page not written: {' '.join(str(error).split())}"
    return f"offers page: {written.path} ({written.size_bytes / 1e6:.1f} MB)"


@flow(name="publish", log_prints=True)
def publish(publish_date: date | None = None) -> PublishOutcome:
    published_at = datetime.now(UTC)
    publish_date = publish_date or published_at.date()
    settings, ranking = config_files.settings(), config_files.ranking()  # read once, passed to the tasks
    resources, reference = config_files.resources(settings), settings.reference
    workloads = load_workloads(config_files.workloads(), ranking)
    champion = load_champion_task(resources.tracking_uri,
                                  ContractFeatures.configured(config_files.telemetry(), reference))
    outcome = publish_night_task(champion, publish_date, published_at, resources, ranking, reference, workloads)
    outcome.markdown += f"\n{write_report_task(resources, workloads)}\n"
    create_table_artifact(
        key="gpu-cost-top-offers",
        table=outcome.top.to_dicts(),
        description=f"Top offers per workload, {publish_date} (model {outcome.ranking.model_version or 'none'})",
    )
    create_markdown_artifact(outcome.markdown, key="gpu-cost-ranking-summary", description="GPU cost ranking")
    print(outcome.markdown)
    return outcome
