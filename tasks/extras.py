"""Optional features and the pip extra that installs each: `pip install 'gpucost[aws]'` (boto3, for the aws-spot
price fetch), `gpucost[postgres]` (psycopg, for an MLflow store on PostgreSQL), `gpucost[dask]` (prefect-dask and
distributed, for the Dask ingest runner), `gpucost[all]`. Without its extra a feature is refused in one line
that names the extra (the command line's exit 2), before anything starts."""

from __future__ import annotations

import importlib.util

# extra -> (importable module, distribution) of what it installs; pyproject.toml's [project.optional-dependencies]
EXTRAS: dict[str, tuple[tuple[str, str], ...]] = {
    "aws": (("boto3", "boto3"),),
    "postgres": (("psycopg", "psycopg"),),
    "dask": (("prefect_dask", "prefect-dask"), ("distributed", "distributed")),
}


class MissingExtraError(Exception):
    """A feature was asked for whose extra is not installed; the message is the one line to show."""


def missing(extra: str) -> list[str]:
    """The distributions of `extra` that cannot be imported here (none: the extra is installed)."""
    return [distribution for module, distribution in EXTRAS[extra] if importlib.util.find_spec(module) is None]


def hint(extra: str, feature: str) -> str | None:
    """One line for `feature` when its extra is missing, else None."""
    absent = missing(extra)
    if not absent:
        return None
    return f"{feature} needs {' and '.join(absent)}, not installed: pip install 'gpucost[{extra}]'"


def require(extra: str, feature: str) -> None:
    message = hint(extra, feature)
    if message:
        raise MissingExtraError(message)


def uses_psycopg(tracking_uri: str | None) -> bool:
    """An MLflow store reached through SQLAlchemy's psycopg (3) dialect, the PostgreSQL driver gpucost ships."""
    return tracking_uri is not None and tracking_uri.split("://", 1)[0] == "postgresql+psycopg"


def check_command(command: str | None, ingest_runner_kind: str, tracking_uri: str | None) -> None:
    """What a command will use, from the configuration it runs with: the Dask ingest runner (commands that
    ingest), an MLflow store on PostgreSQL (commands that read or write the registry)."""
    if command in {"run", "ingest", "fetch"} and ingest_runner_kind == "dask":
        require("dask", 'the Dask ingest runner ([ingest.runner] kind = "dask" or GPUCOST_INGEST_RUNNER=dask)')
    if command in {"run", "train", "publish", "predict"} and uses_psycopg(tracking_uri):
        require("postgres", "MLFLOW_TRACKING_URI postgresql+psycopg://...")
