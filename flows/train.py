"""The `train` flow: read the feature table, cross-validate the configured candidates, register the best in
MLflow and promote it to `champion` only if it beats the re-scored champion (tasks/model/training.py)."""

from __future__ import annotations

import polars as pl
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.retries import io_task_options, with_retries
from tasks import config_files
from tasks.model.config import Models
from tasks.model.training import TrainingOutcome, read_training_features, train_and_register
from tasks.warehouse import warehouse


@task(**io_task_options("read-training-features"))
def read_training_features_task() -> pl.DataFrame:
    with warehouse() as con:
        return read_training_features(con)


@task(name="train-and-register", cache_policy=NO_CACHE)
def train_and_register_task(features: pl.DataFrame, models: Models) -> TrainingOutcome:
    return train_and_register(features, models.model_dump())  # tasks/model reads the tables as plain mappings


@flow(name="train", log_prints=True)
def train() -> TrainingOutcome:
    models = config_files.models()  # read once, passed to the task
    features = with_retries(read_training_features_task, config_files.settings().prefect)()
    outcome = train_and_register_task(features, models)
    report = outcome.markdown()
    create_markdown_artifact(report, key="train-summary", description="Candidates, champion decision, coverage")
    print(report)
    return outcome
