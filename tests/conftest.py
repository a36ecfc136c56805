"""Shared fixtures: a real DuckDB warehouse per test under a temporary GPUCOST_HOME, the bundled real
samples, and one session-scoped Prefect test harness for the few flow-level tests."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Before anything imports Prefect: keep its state out of the user's home, and make accidental use of
# the engine in plain-function tests fail fast instead of starting a server.
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="gpucost-tests-"))
os.environ["GPUCOST_HOME"] = str(_SESSION_DIR / "home")
os.environ["PREFECT_HOME"] = str(_SESSION_DIR / "prefect")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_ENABLED", "false")
os.environ.setdefault("MPLBACKEND", "Agg")

from tasks.settings import DATA_DIR  # noqa: E402

SAMPLES = DATA_DIR / "samples"
PRICE_SAMPLES = SAMPLES / "prices"
TELEMETRY_SAMPLES = SAMPLES / "telemetry"
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def gpucost_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own state folder (warehouse, published db, MLflow store)."""
    home = tmp_path / "gpucost-home"
    monkeypatch.setenv("GPUCOST_HOME", str(home))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return home


@pytest.fixture
def con(gpucost_home: Path) -> Iterator[object]:
    """A real, migrated DuckDB warehouse with the shipped reference tables loaded."""
    from tasks.reference import load_reference_tables
    from tasks.warehouse import warehouse

    with warehouse() as connection:
        load_reference_tables(connection)
        yield connection


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One temporary Prefect API for the whole session (~15 s to start): for flow-level tests only."""
    from prefect.testing.utilities import prefect_test_harness

    os.environ["PREFECT_SERVER_EPHEMERAL_ENABLED"] = "true"
    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def night(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> object:
    """One `gpucost run` through the real command line for the whole session (tests/cli/night.py)."""
    from tests.cli.night import run_night

    return run_night(tmp_path_factory.mktemp("cli-night"))
