"""Where things live, and the configuration files that say how the pipeline behaves.

Every location has an environment override so that a deployment can point the warehouse, the MLflow
store or the Prefect API elsewhere without touching code.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SQL_DIR = PROJECT_ROOT / "sql"
EXPECTATIONS_DIR = PROJECT_ROOT / "expectations"
DATA_DIR = PROJECT_ROOT / "data"
REFERENCE_DIR = DATA_DIR / "reference"


@dataclass(frozen=True)
class Paths:
    """The state folder (`GPUCOST_HOME`) and what it holds."""

    home: Path

    @property
    def warehouse(self) -> Path:
        return Path(os.environ.get("GPUCOST_WAREHOUSE", self.home / "warehouse.duckdb"))

    @property
    def published(self) -> Path:
        return Path(os.environ.get("GPUCOST_PUBLISHED", self.home / "published.duckdb"))

    @property
    def mlflow_tracking_uri(self) -> str:
        return os.environ.get("MLFLOW_TRACKING_URI", f"sqlite:///{self.home / 'mlflow' / 'mlflow.db'}")

    @property
    def mlflow_artifacts(self) -> Path:
        return self.home / "mlflow" / "artifacts"

    @property
    def prefect_home(self) -> Path:
        return Path(os.environ.get("PREFECT_HOME", self.home / "prefect"))

    @property
    def run_lock(self) -> Path:
        return self.home / "nightly.lock"


def paths() -> Paths:
    """Resolve the state folder now (tests change `GPUCOST_HOME` between cases)."""
    home = Path(os.environ.get("GPUCOST_HOME", Path.cwd() / ".gpucost")).resolve()
    return Paths(home=home)


def config_dir() -> Path:
    return Path(os.environ.get("GPUCOST_CONFIG_DIR", PROJECT_ROOT / "config")).resolve()


@cache
def _read_toml(path: str, mtime_ns: int) -> dict[str, Any]:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def load_config(name: str) -> dict[str, Any]:
    """Read `config/<name>.toml` (or the same file under `GPUCOST_CONFIG_DIR`)."""
    path = config_dir() / f"{name}.toml"
    if not path.exists():
        raise FileNotFoundError(f"configuration file {path} is missing")
    return _read_toml(str(path), path.stat().st_mtime_ns)


def resolve_project_path(value: str | Path, base: Path | None = None) -> Path:
    """Paths in config files are relative to the project root unless absolute."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base or PROJECT_ROOT) / path


def configure_prefect_environment() -> None:
    """Keep Prefect's state under GPUCOST_HOME and its telemetry off, unless the user said otherwise.

    Must run before `prefect` is imported: Prefect reads its settings once, at import.
    """
    p = paths()
    os.environ.setdefault("PREFECT_HOME", str(p.prefect_home))
    # Prefect's temporary server cannot create its SQLite file in a folder that does not exist yet.
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOCAL_STORAGE_PATH", str(p.prefect_home / "storage"))
    os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
    # Prefect's temporary server gives up after 20 s by default; a loaded 2-core machine needs longer.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
