"""Fixtures for the token-efficiency model tests: the bundled telemetry through the real ingest and feature
SQL (once per session, in its own DuckDB file), reduced model configs, and trained MLflow stores."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from tasks.settings import PROJECT_ROOT
from tests import configured
from tests.conftest import TELEMETRY_SAMPLES

# Fast candidate sets for most tests (the full set from config/models.toml runs in one test only).
SMALL_CANDIDATES = '''
[[candidates]]
name = "physics_baseline"
kind = "constant_mfu"

[[candidates]]
name = "lasso"
kind = "lasso"
params = { alpha = 0.005, max_iter = 20000 }

[[candidates]]
name = "structured_step_time"
kind = "structured_step_time"
'''

BASELINE_ONLY = '''
[[candidates]]
name = "physics_baseline"
kind = "constant_mfu"
'''


def ingested_features(root: Path, files: list[Path]) -> pl.DataFrame:
    """features.training_runs after a real ingest of `files` into a fresh warehouse under `root` (real SQL)."""
    from tasks.contract.features import refresh_feature_table
    from tasks.model.training import read_training_features
    from tasks.telemetry.ingest import ingest_telemetry_file
    from tasks.warehouse import warehouse

    with warehouse(root / "warehouse.duckdb") as con:
        configured.load_tables(con)
        for path in files:
            ingest_telemetry_file(con, path, configured.aliases(), datetime.now(UTC),
                                  **configured.telemetry_options(vocabulary=configured.vocabulary()))
        refresh_feature_table(con, configured.reference())
        return read_training_features(con)


@pytest.fixture(scope="session")
def training_features(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    """features.training_runs for data/samples/telemetry/published_benchmarks.csv."""
    sample = TELEMETRY_SAMPLES / "published_benchmarks.csv"
    return ingested_features(tmp_path_factory.mktemp("model-features"), [sample])


@pytest.fixture(scope="session")
def all_training_features(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    """features.training_runs for both bundled telemetry files (the default training data of `make run`)."""
    return ingested_features(tmp_path_factory.mktemp("all-model-features"), sorted(TELEMETRY_SAMPLES.glob("*.csv")))


def make_config_dir(root: Path, candidates: str) -> Path:
    """A copy of config/ whose models.toml has `candidates` instead of the shipped candidate list."""
    target = root / "config"
    shutil.copytree(PROJECT_ROOT / "config", target)
    text = (target / "models.toml").read_text(encoding="utf-8")
    head = text[: text.index("[[candidates]]")].replace("n_repeats = 3", "n_repeats = 1")
    (target / "models.toml").write_text(head + candidates, encoding="utf-8")
    return target


@pytest.fixture(scope="session")
def small_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_config_dir(tmp_path_factory.mktemp("small-config"), SMALL_CANDIDATES)


@pytest.fixture(scope="session")
def baseline_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_config_dir(tmp_path_factory.mktemp("baseline-config"), BASELINE_ONLY)


@pytest.fixture
def use_config(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    def use(config_dir: Path) -> None:
        monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(config_dir))

    return use


@pytest.fixture(scope="session")
def trained_home(tmp_path_factory: pytest.TempPathFactory, training_features: pl.DataFrame,
                 small_config_dir: Path) -> tuple[Path, object]:
    """A GPUCOST_HOME whose MLflow store holds one training of the small candidate set (read-only for tests)."""

    from tasks.config_files import load_config
    from tasks.model.training import train_and_register

    home = tmp_path_factory.mktemp("trained-home")
    with pytest.MonkeyPatch.context() as env:  # session scope: the function-scoped monkeypatch is not available
        env.setenv("GPUCOST_HOME", str(home))
        env.setenv("GPUCOST_CONFIG_DIR", str(small_config_dir))
        env.delenv("MLFLOW_TRACKING_URI", raising=False)
        outcome = train_and_register(training_features, load_config("models"), configured.resources(),
                                     configured.contract())
    return home, outcome


@pytest.fixture
def in_trained_home(trained_home: tuple[Path, object], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, object]:
    monkeypatch.setenv("GPUCOST_HOME", str(trained_home[0]))
    return trained_home
