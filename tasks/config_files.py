"""The configuration files (config/*.toml) as their typed models, put together from the sections each domain
owns. Entry points (the command line, the Prefect flows) load what they need here once and pass the typed
sections down; nothing in tasks/ imports this module.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from tasks import config
from tasks.config import Count, MemoryLimit, NonNegative, Strict
from tasks.contract.schema import Telemetry
from tasks.fetch.config import fetch_config_model
from tasks.ingest.config import IngestSettings
from tasks.model.config import Models, models_config
from tasks.prices.config import PriceValidation
from tasks.ranking.config import Ranking, ranking_config
from tasks.ranking.workloads import load_workloads, workloads_config
from tasks.reference import ReferenceFiles, check_reference_files, reference_paths
from tasks.settings import Resources, locate
from tasks.sources import Sources
from tasks.telemetry.config import MlflowTelemetry, mlflow_telemetry_config, telemetry_config

# ----------------------------------------------------------------- settings.toml: the application's own sections


class PrefectRetries(Strict):
    task_retries: Annotated[int, Field(ge=0)] = 2
    task_retry_delay_seconds: NonNegative = 2


class ServeSettings(Strict):
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 4200


class PreflightSettings(Strict):
    min_free_mb: NonNegative = 256


class SignalSettings(Strict):
    stop_grace_seconds: NonNegative = 5


# Upper bounds of the [sql] knobs and of `gpucost sql`'s flags: a day (a longer wait than Python's timer can hold,
# e.g. 1e12 s, was a traceback; 0 lifts the timeout) and 10^9 rows (0: every row).
MAX_TIMEOUT_SECONDS = 86_400
MAX_ROWS = 1_000_000_000


class SqlSettings(Strict):
    """config/settings.toml [sql]: the bounds of `gpucost sql` (0 lifts the timeout and the row limit)."""

    timeout_seconds: Annotated[NonNegative, Field(le=MAX_TIMEOUT_SECONDS)] = 60.0
    memory_limit: MemoryLimit = "1GB"
    max_rows: Annotated[int, Field(ge=0, le=MAX_ROWS)] = 1000
    max_cell_chars: Count = 10_000
    # the result text the client holds (one row; the table view's rows together), MB: past it, one line, exit 1
    max_result_mb: Annotated[int, Field(ge=1, le=1_000_000)] = 256


class Validation(Strict):
    prices: PriceValidation = PriceValidation()


class Settings(Strict):
    """config/settings.toml."""

    reference: ReferenceFiles = ReferenceFiles()
    validation: Validation = Validation()
    ingest: IngestSettings = IngestSettings()
    prefect: PrefectRetries = PrefectRetries()
    serve: ServeSettings = ServeSettings()
    preflight: PreflightSettings = PreflightSettings()
    signals: SignalSettings = SignalSettings()
    sql: SqlSettings = SqlSettings()


# The files read through the generic loader (tasks/config.py); config/workloads.toml is read by its domain's own
# (tasks.ranking.workloads.workloads_config: a bad entry is named by its workload), config/fetch.toml by fetch's.
MODELS: dict[str, type[BaseModel]] = {
    "settings": Settings,
    "sources": Sources,
    "telemetry": Telemetry,
    "mlflow_telemetry": MlflowTelemetry,
    "ranking": Ranking,
    "models": Models,
}


def settings() -> Settings:
    return config.load("settings", Settings)


def sources() -> Sources:
    return config.load("sources", Sources)


def resources(loaded: Settings | None = None) -> Resources:
    """Where this run's state lives (the environment now) and the configured reference folder: an entry point
    builds it once and passes it down. `loaded`: settings.toml as the entry point loaded it."""
    return locate((loaded or settings()).reference.path("folder"))


# The entry points' names for the loaders the domains own (one loader per file).
telemetry = telemetry_config
mlflow_telemetry = mlflow_telemetry_config
ranking = ranking_config
models = models_config
workloads = workloads_config


def check_all() -> None:
    """Every config file validated (and the workloads against the ranking, and every reference file
    config/settings.toml [reference] names against its declaration), ConfigError at the first problem:
    the command line calls this before any flow starts. A config folder from before fetching existed has no
    fetch.toml: the nightly run is then offline."""
    for name, model in MODELS.items():
        config.load(name, model)
    check_reference_files(reference_paths(settings().reference))  # the reference files, as input
    load_workloads(workloads(), ranking())
    if config.config_file("fetch").exists():
        config.load("fetch", fetch_config_model())


def load_config(name: str) -> dict[str, Any]:
    """`config/<name>.toml` (or the same file under `GPUCOST_CONFIG_DIR`) as plain tables, validated first by its
    typed model (ConfigError in one line), for scripts and tests that edit a file's tables."""
    if name == "workloads":
        workloads()
    else:
        config.load(name, MODELS[name])
    return config.read_toml(name)
