"""The `publish` flow: rank every offer for every workload with the champion model and publish the
database users query (atomically), with a table artifact, a markdown summary and a chart."""

from __future__ import annotations

from datetime import UTC, date, datetime

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from tasks import config_files
from tasks.model.predict import load_champion
from tasks.publishing.night import PublishOutcome, publish_night
from tasks.ranking.config import Ranking
from tasks.ranking.rank import ThroughputModel
from tasks.reference import ReferenceFiles
from tasks.settings import paths
from tasks.stores import mlflow_problem
from tasks.warehouse import warehouse


@task(name="load-champion", cache_policy=NO_CACHE)
def load_champion_task() -> ThroughputModel | None:
    damaged = mlflow_problem(paths().mlflow_tracking_uri)
    if damaged is not None:  # no model tonight: every row says why (read_model_versions notes the file)
        print(damaged.message)
        return None
    return load_champion(paths().mlflow_tracking_uri)


@task(name="publish-night", cache_policy=NO_CACHE)
def publish_night_task(champion: ThroughputModel | None, publish_date: date, published_at: datetime,
                       ranking: Ranking, reference: ReferenceFiles) -> PublishOutcome:
    with warehouse() as con:
        return publish_night(con, champion, publish_date, published_at, ranking=ranking, reference=reference)


@flow(name="publish", log_prints=True)
def publish(publish_date: date | None = None) -> PublishOutcome:
    published_at = datetime.now(UTC)
    publish_date = publish_date or published_at.date()
    ranking, reference = config_files.ranking(), config_files.settings().reference  # read once, passed to the tasks
    champion = load_champion_task()
    outcome = publish_night_task(champion, publish_date, published_at, ranking, reference)
    create_table_artifact(
        key="gpu-cost-top-offers",
        table=outcome.top.to_dicts(),
        description=f"Top offers per workload, {publish_date} (model {outcome.ranking.model_version or 'none'})",
    )
    create_markdown_artifact(outcome.markdown, key="gpu-cost-ranking-summary", description="GPU cost ranking")
    print(outcome.markdown)
    return outcome
