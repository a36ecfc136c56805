"""Where things live (the state folder and what it holds, overridable by environment variables), the base of
every config model, and how a bad value is said. The bottom layer: it imports nothing of the project.

Every location has an environment override so that a deployment can point the warehouse, the MLflow
store or the Prefect API elsewhere without touching code.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SQL_DIR = PROJECT_ROOT / "sql"
EXPECTATIONS_DIR = PROJECT_ROOT / "expectations"
DATA_DIR = PROJECT_ROOT / "data"
REFERENCE_DIR = DATA_DIR / "reference"


class ConfigError(ValueError):
    """A configuration file or an environment override is wrong: one line naming the file (or the variable),
    the key and what was wrong. The command line exits with code 2 (gpucost.commands.Exit.INPUT)."""


KINDS = {
    "int": "an integer", "float": "a number", "string": "a string", "bool": "true or false",
    "list": "a list", "dict": "a table", "model": "a table", "model_attributes": "a table",
}


def what_was_wrong(error: Mapping[str, Any]) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        return "unknown key (a typo?)"
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        expected = str(error.get("ctx", {}).get("expected", "")).replace(" or ", ", ")
        return f"must be one of {expected} (got {value!r})"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    base = kind.removesuffix("_type").removesuffix("_parsing")
    if base in KINDS:
        return f"must be {KINDS[base]} (got {value!r})"
    comparisons = {"greater_than": "> {gt}", "greater_than_equal": ">= {ge}", "less_than": "< {lt}",
                   "less_than_equal": "<= {le}"}
    if kind in comparisons:
        bounds = {k: f"{v:g}" if isinstance(v, int | float) else v for k, v in error.get("ctx", {}).items()}
        return f"must be {comparisons[kind].format(**bounds)} (got {value!r})"
    return f"{str(error['msg'])[:1].lower()}{str(error['msg'])[1:]} (got {value!r})"


class Strict(BaseModel):
    """The base of every config file's model: unknown keys are typos; "32" is not 32 and true is not 1."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


def fetch_url_variable(provider: str) -> str:
    """The variable that replaces a provider's base URL (mirrors, proxies, tests): GPUCOST_FETCH_<PROVIDER>_URL."""
    return f"GPUCOST_FETCH_{provider.upper().replace('-', '_')}_URL"


FETCH_URL_VARIABLE = re.compile(r"GPUCOST_FETCH_[A-Z0-9_]+_URL")


class Environment(BaseSettings):
    """The environment variables that override where state lives and how the pipeline runs (read when asked:
    tests and deployments change them between runs). Unset = the config files' and the defaults' values."""

    model_config = SettingsConfigDict(env_prefix="GPUCOST_", extra="ignore", frozen=True, env_ignore_empty=True)

    home: Path | None = None                 # GPUCOST_HOME: the state folder (default ./.gpucost)
    config_dir: Path | None = None           # GPUCOST_CONFIG_DIR: another folder of config/*.toml
    warehouse: Path | None = None            # GPUCOST_WAREHOUSE
    published: Path | None = None            # GPUCOST_PUBLISHED
    parquet_dir: str | None = None           # GPUCOST_PARQUET_DIR: over ranking.toml [publish] parquet_dir
    ingest_runner: str | None = None         # GPUCOST_INGEST_RUNNER: over settings.toml [ingest.runner] kind
    ingest_workers: int | None = None        # GPUCOST_INGEST_WORKERS: over settings.toml [ingest.runner] workers
    nightly_cron: str | None = None          # GPUCOST_NIGHTLY_CRON: `gpucost serve` over prefect.yaml's nightly cron
    nightly_timezone: str | None = None      # GPUCOST_NIGHTLY_TIMEZONE: and its timezone
    mlflow_tracking_uri: str | None = Field(None, validation_alias="MLFLOW_TRACKING_URI")
    prefect_home: Path | None = Field(None, validation_alias="PREFECT_HOME")

    @classmethod
    def variables(cls) -> tuple[str, ...]:
        return tuple(str(f.validation_alias or f"GPUCOST_{name.upper()}") for name, f in cls.model_fields.items())

    @classmethod
    def current(cls) -> Environment:
        """The environment now, or ConfigError naming the variable whose value cannot be read."""
        return _environment(tuple(os.environ.get(name) for name in cls.variables()))

    @classmethod
    def read(cls) -> Environment:
        try:
            return cls()
        except ValidationError as error:
            first = error.errors(include_url=False)[0]
            field = cls.model_fields.get(str(first["loc"][0]))
            variable = str(field.validation_alias) if field and field.validation_alias else \
                f"GPUCOST_{str(first['loc'][0]).upper()}"
            raise ConfigError(f"{variable}: {what_was_wrong(first)}") from None

    @staticmethod
    def fetch_url(provider: str) -> str | None:
        """GPUCOST_FETCH_<PROVIDER>_URL for any provider (read now, not a field: providers register themselves)."""
        return os.environ.get(fetch_url_variable(provider)) or None

    @staticmethod
    def fetch_urls() -> dict[str, str]:
        """Every GPUCOST_FETCH_<PROVIDER>_URL that is set, by variable (checked before a command starts)."""
        return {name: value for name, value in sorted(os.environ.items())
                if FETCH_URL_VARIABLE.fullmatch(name) and value}

    def overrides(self, file: str) -> dict[tuple[str, ...], tuple[str, Any]]:
        """Key path in config/<file>.toml -> (variable, value), for the overrides that are set."""
        by_file: dict[str, dict[tuple[str, ...], tuple[str, Any]]] = {
            "settings": {("ingest", "runner", "kind"): ("GPUCOST_INGEST_RUNNER", self.ingest_runner),
                         ("ingest", "runner", "workers"): ("GPUCOST_INGEST_WORKERS", self.ingest_workers)},
            "ranking": {("publish", "parquet_dir"): ("GPUCOST_PARQUET_DIR", self.parquet_dir)},
        }
        chosen = by_file.get(file, {})
        return {path: (name, value) for path, (name, value) in chosen.items() if value not in (None, "")}

    def key(self, file: str) -> tuple[Any, ...]:
        """What a cached config/<file>.toml depends on besides the file."""
        return tuple(sorted((p, v) for p, (_, v) in self.overrides(file).items()))


@cache
def _environment(values: tuple[str | None, ...]) -> Environment:
    """Reading the environment through pydantic-settings takes milliseconds: once per set of values."""
    return Environment.read()


MLFLOW_ARTIFACTS = Path("mlflow") / "artifacts"  # a local MLflow store's artifacts, inside the state folder


@dataclass(frozen=True)
class Resources:
    """Where this run's state and shipped data live: the state folder (`GPUCOST_HOME`) and what it holds, the MLflow
    tracking URI and the reference folder. An entry point (a command, a flow) builds it once
    (tasks.config_files.resources) and passes it down; nothing below reads the environment for it."""

    home: Path
    warehouse: Path
    published: Path
    tracking_uri: str
    prefect_home: Path
    reference: Path  # the reference folder (config/settings.toml [reference] folder): the adapters' lookup tables

    @property
    def mlflow_artifacts(self) -> Path:
        return self.home / MLFLOW_ARTIFACTS

    @property
    def run_lock(self) -> Path:
        return self.home / "nightly.lock"

    @property
    def downloads(self) -> Path:
        """Where fetched price lists land (one folder per provider)."""
        return self.home / "downloads"


def state_home(environment: Environment) -> Path:
    return (environment.home or Path.cwd() / ".gpucost").resolve()


def prefect_home(environment: Environment) -> Path:
    """Prefect's state folder: `PREFECT_HOME` when set, else inside the state folder."""
    return environment.prefect_home or state_home(environment) / "prefect"


def locate(reference: Path, environment: Environment | None = None) -> Resources:
    """The resources as the environment says now (tests change `GPUCOST_HOME` between cases), with `reference` the
    configured reference folder."""
    environment = environment or Environment.current()
    home = state_home(environment)
    return Resources(
        home=home,
        warehouse=environment.warehouse or home / "warehouse.duckdb",
        published=environment.published or home / "published.duckdb",
        tracking_uri=environment.mlflow_tracking_uri or f"sqlite:///{home / 'mlflow' / 'mlflow.db'}",
        prefect_home=prefect_home(environment),
        reference=reference,
    )


def config_dir() -> Path:
    return (Environment.current().config_dir or PROJECT_ROOT / "config").resolve()


def resolve_project_path(value: str | Path, base: Path | None = None) -> Path:
    """Paths in config files are relative to the project root unless absolute."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base or PROJECT_ROOT) / path


def configure_prefect_environment(create_home: bool = True) -> None:
    """Keep Prefect's state under GPUCOST_HOME and its telemetry off, unless the user said otherwise.

    Must run before `prefect` is imported: Prefect reads its settings once, at import. `create_home=False` for a
    command that runs no flow (`--help`, `offers`, `sql`): it leaves no Prefect folder behind (in ./.gpucost by
    default, wherever the user happened to type it).
    """
    try:
        environment = Environment.current()
    except ConfigError:
        return  # a bad override: the command line says so in one line before anything runs
    prefect_folder = prefect_home(environment)
    os.environ.setdefault("PREFECT_HOME", str(prefect_folder))
    # Prefect's temporary server cannot create its SQLite file in a folder that does not exist yet.
    # a read-only or unusable GPUCOST_HOME: the command line says so in one line before anything runs
    if create_home:
        with contextlib.suppress(OSError):
            Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOCAL_STORAGE_PATH", str(prefect_folder / "storage"))
    os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
    # Prefect's temporary server gives up after 20 s by default; a loaded 2-core machine needs longer.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
