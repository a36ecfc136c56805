"""The `train` flow: read the feature table, cross-validate the configured candidates, register the best in
MLflow and promote it to `champion` only if it beats the re-scored champion (tasks/model/training.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.retries import io_task_options, with_retries
from tasks import config_files
from tasks.model.config import Models
from tasks.model.contract_rows import ContractFeatures
from tasks.model.training import TrainingOutcome, read_training_features, train_and_register
from tasks.settings import Resources
from tasks.warehouse import warehouse


@task(**io_task_options("read-training-features"))
def read_training_features_task(warehouse_path: Path) -> pl.DataFrame:
    with warehouse(warehouse_path) as con:
        return read_training_features(con)


@task(name="train-and-register", cache_policy=NO_CACHE)
def train_and_register_task(features: pl.DataFrame, models: Models, resources: Resources,
                            contract: ContractFeatures) -> TrainingOutcome:
    return train_and_register(features, models, resources, contract)


@flow(name="train", log_prints=True)
def train() -> TrainingOutcome:
    settings, models = config_files.settings(), config_files.models()  # read once, passed to the tasks
    resources = config_files.resources(settings)
    contract = ContractFeatures.configured(config_files.telemetry(), settings.reference)
    features = with_retries(read_training_features_task, settings.prefect)(resources.warehouse)
    outcome = train_and_register_task(features, models, resources, contract)
    report = outcome.markdown()
    create_markdown_artifact(report, key="train-summary", description="Candidates, champion decision, coverage")
    print(report)
    return outcome
