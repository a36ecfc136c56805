"""The configuration and resources as an entry point loads them (config/ and GPUCOST_HOME as the test's environment
says, read at each call), for tests that call tasks directly: tasks take them as arguments."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from tasks import config_files
from tasks.config_files import Settings
from tasks.contract.normalise import load_vocabulary
from tasks.reference import ReferenceFiles, load_reference_tables, read_aliases, reference_paths
from tasks.settings import Resources


def settings() -> Settings:
    return config_files.settings()


def resources(**changes: Any) -> Resources:
    """The resources now, with `changes` (e.g. published=tmp_path / "p.duckdb")."""
    return replace(config_files.resources(), **changes)


def reference() -> ReferenceFiles:
    return settings().reference


def reference_files() -> dict[str, Path]:
    return reference_paths(reference())


def aliases() -> pl.DataFrame:
    return read_aliases(reference_files()["gpu_aliases"])


def load_tables(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return load_reference_tables(con, reference_files())


def vocabulary() -> dict[str, dict[str, Any]]:
    return load_vocabulary(config_files.telemetry())


def price_options(**changes: Any) -> dict[str, Any]:
    """The keyword arguments of tasks.prices.ingest.ingest_price_file as the price flow passes them."""
    loaded, state = settings(), resources()
    return {"validation": loaded.validation.prices, "reference_dir": state.reference,
            "limits": loaded.ingest.limits(state.home), **changes}


def telemetry_options(**changes: Any) -> dict[str, Any]:
    """The keyword arguments of tasks.telemetry.ingest.ingest_telemetry_file as the telemetry flow passes them."""
    loaded, state = settings(), resources()
    return {"vocabulary": vocabulary(), "validation": config_files.telemetry().validation,
            "limits": loaded.ingest.limits(state.home), **changes}


def mlflow_options(**changes: Any) -> dict[str, Any]:
    """The keyword arguments of tasks.telemetry.mlflow_ingest.ingest_mlflow_source as the telemetry flow passes them."""
    return {**telemetry_options(), "settings": config_files.mlflow_telemetry(), **changes}


def night(**changes: Any) -> dict[str, Any]:
    """The keyword arguments of tasks.publishing.night.publish_night as the publish flow passes them."""
    from tasks.ranking.workloads import load_workloads

    ranking = changes.get("ranking") or config_files.ranking()
    return {"ranking": ranking, "reference": reference(),
            "workloads": load_workloads(config_files.workloads(), ranking), **changes}


def contract() -> Any:
    """tasks.model.contract_rows.ContractFeatures as the train and publish flows build it."""
    from tasks.model.contract_rows import ContractFeatures

    return ContractFeatures.configured(config_files.telemetry(), reference())


def predict_options() -> dict[str, Any]:
    """The arguments of tasks.model.predict.predict_file after the two paths, as `gpucost predict` passes them."""
    return {"tracking_uri": resources().tracking_uri, "telemetry": config_files.telemetry(),
            "reference": reference()}


def price_ingest() -> Any:
    """tasks.fetch.handoff.PriceIngest as the fetch flow builds it."""
    from tasks.fetch.handoff import PriceIngest

    loaded = settings()
    return PriceIngest(loaded.validation.prices, loaded.reference, loaded.ingest.limits(resources().home))


def limits() -> Any:
    """tasks.ingest.config.IngestLimits as the ingest flows pass them."""
    return settings().ingest.limits(resources().home)


def overrides() -> pl.DataFrame:
    """The adapters' instance overrides of the configured reference folder (tasks.prices.ingest.read_overrides)."""
    from tasks.prices.ingest import read_overrides

    return read_overrides(resources().reference)


def workloads(ranking: Any = None) -> pl.DataFrame:
    """The rows of config/workloads.toml (tasks.ranking.workloads.load_workloads) against `ranking` (default: the
    configured config/ranking.toml)."""
    from tasks.ranking.workloads import load_workloads

    return load_workloads(config_files.workloads(), ranking or config_files.ranking())
