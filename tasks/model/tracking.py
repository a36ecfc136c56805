"""MLflow: the tracking store and registry (SQLite under GPUCOST_HOME unless MLFLOW_TRACKING_URI says otherwise),
the experiment, and reading the current champion."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import mlflow
from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from tasks.model.home_artifacts import ensure_registered, home_artifact_location
from tasks.settings import MLFLOW_ARTIFACTS

EXPERIMENT = "token-efficiency"
REGISTERED_MODEL = "token-efficiency"
CHAMPION = "champion"
CHALLENGER = "challenger"

# version tags (what makes a version re-scorable and explainable)
TAG_SPEC = "candidate_spec"
TAG_DIGEST = "data_digest"
TAG_DECISION = "promotion_decision"
TAG_REASON = "promotion_reason"
TAG_WAS_CHAMPION = "was_champion"      # "true" once a version has held `champion` (fallback order)
TAG_STATUS_NOTE = "status_note"        # why a version has no alias (e.g. left by an interrupted training)
# version and run tag: sha256 of what the registered model is made of (tasks.model.registry.training_fingerprint)
TAG_FINGERPRINT = "training_fingerprint"
# run tag of a training that registered nothing: why (the version it would have duplicated)
TAG_NOT_REGISTERED = "not_registered_reason"
UNCHANGED = "unchanged"                # promotion_decision of such a run


@dataclass(frozen=True)
class Tracking:
    client: MlflowClient
    uri: str
    experiment_id: str


def _quiet() -> None:
    # the SQLite store logs every schema migration at INFO on first use
    for name in ("alembic", "mlflow.store.db.utils"):
        logging.getLogger(name).setLevel(logging.WARNING)


def connect_tracking(uri: str, home: Path | None = None, create_experiment: bool = True) -> Tracking:
    """Point MLflow at the store; create the experiment if needed, a local store's with its artifacts in the state
    folder `home` (which creating one there needs)."""
    _quiet()
    ensure_registered()
    if uri.startswith("sqlite:///"):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None and create_experiment:
        # a local store keeps its artifacts under GPUCOST_HOME (not in the working directory, MLflow's default),
        # stored relative to it (tasks/model/home_artifacts.py says why); a tracking server decides for itself
        location = None
        if uri.startswith("sqlite:") or uri.startswith("file:"):
            if home is None:
                raise ValueError(f"creating the experiment of the local store {uri} needs the state folder")
            (home / MLFLOW_ARTIFACTS).mkdir(parents=True, exist_ok=True)
            location = home_artifact_location()
        experiment_id = client.create_experiment(EXPERIMENT, artifact_location=location)
    else:
        experiment_id = experiment.experiment_id if experiment is not None else ""
    return Tracking(client=client, uri=uri, experiment_id=experiment_id)


def version_by_alias(client: MlflowClient, alias: str) -> ModelVersion | None:
    """The version holding `alias`, or None when the model or alias does not exist."""
    try:
        return client.get_model_version_by_alias(REGISTERED_MODEL, alias)
    except MlflowException as error:
        if error.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE", "NOT_FOUND"):
            return None
        raise


def was_champion(version: ModelVersion) -> bool:
    """Has this version held `champion`? (Tagged at promotion; older versions: promoted at registration.)"""
    tags = version.tags or {}
    return tags.get(TAG_WAS_CHAMPION) == "true" or tags.get(TAG_DECISION) == CHAMPION
