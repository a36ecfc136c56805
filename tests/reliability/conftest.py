"""One small prepared state for the whole folder, built once per session from real sample files.

`base`: prices A, B + the sample telemetry ingested, features built, a baseline-only model trained
(MLflow version 1 = champion) and night FIRST_NIGHT published. For every step the crash tests interrupt,
a reference state is built too: `base` + that step run uninterrupted (`after-prices`, `after-telemetry`,
`after-train`, `after-publish`).

MLflow stores absolute artifact paths, so every state lives at ONE path (`States.work`) while in use:
`restore(name)` empties that folder and copies the snapshot back into it (tests run one at a time).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest

from tasks.settings import PROJECT_ROOT
from tests import configured
from tests.reliability import driver
from tests.reliability.helpers import published_checksums, warehouse_checksums

BASELINE_ONLY = '''
[[candidates]]
name = "physics_baseline"
kind = "constant_mfu"
'''
BASELINE_AND_RIDGE = BASELINE_ONLY + '''
[[candidates]]
name = "ridge"
kind = "ridge"
params = { alpha = 3.0 }
'''


def write_config(target: Path, candidates: str, seed: int | None = None) -> Path:
    """config/ with a small candidate list (and another `seed`, if given) and a sources file naming only the base
    state's inputs."""
    shutil.copytree(PROJECT_ROOT / "config", target)
    text = (target / "models.toml").read_text(encoding="utf-8")
    head = text[: text.index("[[candidates]]")].replace("n_repeats = 3", "n_repeats = 1")
    if seed is not None:
        head = re.sub(r"(?m)^seed = \d+", f"seed = {seed}", head)
    (target / "models.toml").write_text(head + candidates, encoding="utf-8")
    sources = [
        f'[[prices]]\npath = "{driver.PRICES / name}"\nprovider = "{provider}"\nformat = "{fmt}"\n'
        for name, provider, fmt in driver.BASE_PRICE_FILES
    ]
    sources.append(f'[[telemetry]]\npath = "{driver.TELEMETRY}"\n')
    (target / "sources.toml").write_text("\n".join(sources), encoding="utf-8")
    return target


def second_telemetry_file(path: Path) -> Path:
    """10 sample runs re-measured 10% faster (they replace the current records; history keeps the old ones)
    and 5 new runs (copies of sample rows under new run_ids)."""
    sample = pl.read_csv(driver.TELEMETRY, infer_schema=False)
    faster = sample.head(10).with_columns(
        (pl.col("tokens_per_sec_per_gpu").cast(pl.Float64) * 1.1).round(1).cast(pl.String)
    )
    new = sample.slice(10, 5).with_columns(pl.col("run_id") + "-rerun")
    pl.concat([faster, new]).write_csv(path)
    return path


def close_mlflow_connections() -> None:
    """MLflow keeps one SQLAlchemy engine per store URI for the life of the process; its pooled connections
    would keep writing to the deleted file of the previous state (same path), so close them first."""
    from mlflow.store.model_registry.sqlalchemy_store import SqlAlchemyStore as RegistryStore
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore as TrackingStore

    for engine in [*TrackingStore._engine_map.values(), *RegistryStore._engine_map.values()]:
        engine.dispose()


@dataclass
class States:
    work: Path                      # GPUCOST_HOME of whichever state is in use
    snapshots: Path
    base_config: Path               # baseline-only candidates: trained the base champion
    config: Path                    # baseline + ridge: what the steps under test use
    telemetry_file: Path            # the telemetry step's input
    warehouse: dict[str, dict] = field(default_factory=dict)   # state -> warehouse checksums
    published: dict[str, dict] = field(default_factory=dict)   # state -> published checksums
    champion_predictions: dict[str, pl.DataFrame] = field(default_factory=dict)
    trainings: dict[str, TrainingResult] = field(default_factory=dict)       # state -> what its training left

    def restore(self, name: str) -> Path:
        close_mlflow_connections()
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.copytree(self.snapshots / name, self.work)
        return self.work

    def snapshot(self, name: str) -> None:
        shutil.copytree(self.work, self.snapshots / name)
        self.warehouse[name] = warehouse_checksums(self.work / "warehouse.duckdb")
        self.published[name] = published_checksums(self.work / "published.duckdb")


@dataclass(frozen=True)
class TrainingResult:
    """What the trainings of a state left in the MLflow registry."""

    champion: str                            # the version holding `champion`
    newest: str                              # the version the last training registered
    newest_alias: str | None                 # what that training decided for it (champion / challenger)
    interrupted: tuple[str, ...]             # versions tagged as left by an interrupted training
    unaliased_untagged: tuple[str, ...]      # versions with neither an alias nor a note (half-done, unexplained)
    running_runs: int                        # MLflow runs still RUNNING (a killed training's, not cleaned up)
    newest_predictions: pl.DataFrame         # how the newest version predicts the training rows


def version_predictions(version: str, features: pl.DataFrame) -> pl.DataFrame:
    import mlflow.pyfunc

    from tasks.model.predict import Champion
    from tasks.model.tracking import REGISTERED_MODEL

    pyfunc = mlflow.pyfunc.load_model(f"models:/{REGISTERED_MODEL}/{version}")
    model = Champion(version=version, pyfunc=pyfunc, model=pyfunc.unwrap_python_model().model)
    return model.predict(features).select("run_id", "predicted_tokens_per_sec_per_gpu", "predicted_low",
                                          "predicted_high")


def training_result(features: pl.DataFrame) -> TrainingResult:
    from tasks.model.tracking import CHAMPION, REGISTERED_MODEL, TAG_DECISION, TAG_STATUS_NOTE, connect_tracking

    tracking = connect_tracking(configured.resources().tracking_uri, create_experiment=False)
    client = tracking.client
    # version numbers as text (MLflow gives int or str depending on the call)
    versions = {str(v.version): v.tags or {} for v in client.search_model_versions(f"name = '{REGISTERED_MODEL}'")}
    aliases = {alias: str(v) for alias, v in client.get_registered_model(REGISTERED_MODEL).aliases.items()}
    newest = max(versions, key=int)
    running = client.search_runs([tracking.experiment_id], filter_string="attributes.status = 'RUNNING'")
    return TrainingResult(
        champion=aliases[CHAMPION], newest=newest,
        newest_alias=next((a for a, v in aliases.items() if v == newest), None),
        interrupted=tuple(sorted((v for v, tags in versions.items() if TAG_STATUS_NOTE in tags), key=int)),
        unaliased_untagged=tuple(sorted((v for v, tags in versions.items() if v not in aliases.values()
                                         and not {TAG_DECISION, TAG_STATUS_NOTE} & set(tags)), key=int)),
        running_runs=len(running), newest_predictions=version_predictions(newest, features))


def champion_predictions(features: pl.DataFrame) -> pl.DataFrame:
    from tasks.model.predict import load_champion

    champion = load_champion(configured.resources().tracking_uri, configured.contract())
    assert champion is not None
    return champion.predict(features).select("run_id", "predicted_tokens_per_sec_per_gpu", "predicted_low",
                                             "predicted_high")


def training_features() -> pl.DataFrame:
    from tasks.model.training import read_training_features
    from tasks.warehouse import warehouse

    with warehouse(configured.resources().warehouse, read_only=True) as con:
        return read_training_features(con)


@pytest.fixture(scope="session")
def base_states(tmp_path_factory: pytest.TempPathFactory) -> States:
    """The `base` state only: what the probes of a bad night start from (tests/reliability/test_bad_night_3.py)."""
    root = tmp_path_factory.mktemp("reliability")
    s = States(work=root / "home", snapshots=root / "snapshots",
               # another seed: the steps' training on the same rows is then not identical to the base champion
               # (an identical one registers no version) and registers version 2, the state under test
               base_config=write_config(root / "base-config", BASELINE_ONLY, seed=1),
               config=write_config(root / "config", BASELINE_AND_RIDGE),
               telemetry_file=second_telemetry_file(root / "telemetry_remeasured.csv"))
    with pytest.MonkeyPatch.context() as env:  # session scope: the function-scoped monkeypatch is not available
        env.delenv("MLFLOW_TRACKING_URI", raising=False)
        env.setenv("GPUCOST_HOME", str(s.work))
        env.setenv("GPUCOST_CONFIG_DIR", str(s.base_config))
        driver.ingest_prices(driver.BASE_PRICE_FILES)
        driver.ingest_telemetry(driver.TELEMETRY)
        driver.train()
        driver.publish(driver.FIRST_NIGHT)
        s.snapshot("base")
        s.champion_predictions["base"] = champion_predictions(training_features())
    # the environment is restored here, not at the session's end: later tests (other folders) must not run
    # against the reliability config (the Dask ingest test found its sources missing)
    return s


@pytest.fixture(scope="session")
def states(base_states: States) -> Iterator[States]:
    """`base` and, for every step the crash tests interrupt, `base` + that step run uninterrupted."""
    s = base_states
    with pytest.MonkeyPatch.context() as env:
        env.delenv("MLFLOW_TRACKING_URI", raising=False)
        env.setenv("GPUCOST_HOME", str(s.work))
        env.setenv("GPUCOST_CONFIG_DIR", str(s.config))
        for step in driver.CHECKPOINTS:
            s.restore("base")
            driver.run_step(step, s.telemetry_file)
            s.snapshot(f"after-{step}")
            if step == "train":
                s.champion_predictions["after-train"] = champion_predictions(training_features())
                s.trainings["after-train"] = training_result(training_features())
    yield s


@pytest.fixture
def work_home(states: States, monkeypatch: pytest.MonkeyPatch) -> States:
    """GPUCOST_HOME and GPUCOST_CONFIG_DIR point at the shared state folder (restore a snapshot into it)."""
    monkeypatch.setenv("GPUCOST_HOME", str(states.work))
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(states.config))
    return states
