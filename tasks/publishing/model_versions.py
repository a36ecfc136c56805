"""The registered versions of the token-efficiency model, read from MLflow for the published database."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import polars as pl

from tasks.stores import mlflow_problem

MODEL_VERSION_SCHEMA: dict[str, pl.DataType] = {
    "model_name": pl.String(),
    "version": pl.String(),
    "aliases": pl.String(),             # comma-separated, e.g. "champion"
    "is_champion": pl.Boolean(),
    "status": pl.String(),
    "run_id": pl.String(),
    "created_at": pl.Datetime("us", "UTC"),
    "metrics": pl.String(),             # JSON object: every metric of the version's MLflow run (CV metrics)
    "params": pl.String(),              # JSON object: the run's parameters
}


def empty_model_versions() -> pl.DataFrame:
    return pl.DataFrame(schema=MODEL_VERSION_SCHEMA)


def read_model_versions(tracking_uri: str) -> tuple[pl.DataFrame, str | None]:
    """(versions, message): message says why the table is empty when it is."""
    if tracking_uri.startswith("sqlite:///"):
        from pathlib import Path

        if not Path(tracking_uri.removeprefix("sqlite:///")).exists():
            return empty_model_versions(), f"no MLflow store at {tracking_uri} yet (run `gpucost train`)"

    damaged = mlflow_problem(tracking_uri)
    if damaged is not None:
        return empty_model_versions(), damaged.message
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    # start-up time: MLflow (and tasks.model.tracking, which imports it) loads only when a registry is read
    from tasks.model.tracking import REGISTERED_MODEL as MODEL_NAME  # the one place the name is defined

    client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    try:
        versions = client.search_model_versions(f"name = '{MODEL_NAME}'")
    except MlflowException as error:
        return empty_model_versions(), f"cannot read the MLflow registry at {tracking_uri}: {error}"
    # a tracking server's version search returns no aliases (the SQLite store's does): read them from the model
    aliases_of: dict[str, list[str]] = {}
    if versions:
        try:
            registered = client.get_registered_model(MODEL_NAME)
            for alias, number in (registered.aliases or {}).items():
                aliases_of.setdefault(str(number), []).append(alias)
        except MlflowException:
            pass
    rows = []
    for version in versions:
        aliases = sorted(set(getattr(version, "aliases", []) or []) | set(aliases_of.get(str(version.version), [])))
        metrics: dict[str, float] = {}
        params: dict[str, str] = {}
        if version.run_id:
            try:
                run = client.get_run(version.run_id)
                metrics, params = dict(run.data.metrics), dict(run.data.params)
            except MlflowException:
                pass
        rows.append(
            {
                "model_name": version.name,
                "version": str(version.version),
                "aliases": ",".join(aliases) or None,
                "is_champion": "champion" in aliases,
                "status": str(version.status) if version.status is not None else None,
                "run_id": version.run_id,
                "created_at": datetime.fromtimestamp(version.creation_timestamp / 1000, UTC)
                if version.creation_timestamp
                else None,
                "metrics": json.dumps(metrics, sort_keys=True),
                "params": json.dumps(params, sort_keys=True),
            }
        )
    frame = pl.DataFrame(rows, schema=MODEL_VERSION_SCHEMA) if rows else empty_model_versions()
    return frame, None if rows else f"no registered versions of {MODEL_NAME} in MLflow"
