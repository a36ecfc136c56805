"""Dependencies failing: the MLflow store locked or unreachable, a registered model whose files are gone,
a transient I/O error under a Prefect task."""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from tasks.settings import PROJECT_ROOT
from tests import configured
from tests.reliability import driver
from tests.reliability.conftest import States, training_features
from tests.reliability.helpers import PYTHON, start_child

# Another MLflow writer in the middle of a long transaction: SQLite RESERVED lock (others may read, not write).
LOCK_MLFLOW = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("begin immediate")
print("LOCKED", flush=True)
time.sleep(600)
"""


def test_nightly_keeps_the_champion_when_mlflow_is_locked_and_retries_a_transient_io_error(
    prefect_harness, work_home: States, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One nightly run, two faults: the MLflow store is locked by another writer for the whole run (training
    gives up after MLflow's 20 s SQLite busy timeout), and reading the first price file fails once with EIO."""
    import tasks.ingest.lifecycle as price_ingest
    from flows.nightly import nightly

    home = work_home.restore("base")
    flaky = driver.PRICES / driver.BASE_PRICE_FILES[0][0]
    real_read = price_ingest.read_into_part  # the one read of a file: its hash and its bytes to land
    calls: list[Path] = []

    def read_failing_once(path: Path, *args: object) -> object:
        calls.append(Path(path))
        if Path(path) == flaky and calls.count(flaky) == 1:
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real_read(path, *args)

    monkeypatch.setattr(price_ingest, "read_into_part", read_failing_once)
    # The base state's prices were observed on driver.INGESTED_AT and tonight is the real date: widen the
    # stale-price limit so tonight's ranking is about the champion, not the prices' age.
    config = shutil.copytree(PROJECT_ROOT / "config", tmp_path / "config")
    ranking = config / "ranking.toml"
    ranking.write_text(re.sub(r"max_price_age_days = \d+", "max_price_age_days = 36500", ranking.read_text()))
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(config))
    locker = start_child([PYTHON, "-c", LOCK_MLFLOW, str(home / "mlflow" / "mlflow.db")], dict(os.environ),
                         tmp_path / "locker.err")
    try:
        assert locker.stdout is not None and locker.stdout.readline().startswith("LOCKED")
        steps = nightly()
    finally:
        locker.kill()
        locker.wait(timeout=30)

    # the EIO was retried by Prefect (2 reads of the file), and the file is the base state's: already ingested
    assert calls.count(flaky) == 2
    assert steps["ingest_prices"] == "completed" and steps["ingest_telemetry"] == "completed"
    assert steps["train"].startswith("skipped (") and "database is locked" in steps["train"]
    assert steps["train"].endswith("yesterday's champion model is kept and used")
    assert steps["publish"].startswith("completed: ") and steps["publish"].endswith(", model 1")
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:  # the EIO left no quarantine
        assert con.sql("select count(*) from quarantine.rejected_files").fetchall() == [(0,)]
    with duckdb.connect(str(home / "published.duckdb"), read_only=True) as con:
        assert con.sql("select distinct model_version, publish_date from gpu_cost_ranking "
                       "where rank_by_cost is not null").fetchall() == [("1", datetime.now(UTC).date())]



def test_unreachable_mlflow_store_fails_training_clearly_and_publish_still_runs(
    work_home: States, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tasks.model.predict import load_champion

    home = work_home.restore("base")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the MLflow store's folder should be")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{blocker}/mlflow/mlflow.db")
    with pytest.raises(OSError, match="not-a-folder"):
        driver.train()
    # nothing to load from a store that cannot exist; no exception
    assert load_champion(configured.resources().tracking_uri, configured.contract()) is None
    outcome = driver.publish(driver.NEXT_NIGHT)
    # every offer is still published, none ranked, each saying why
    assert outcome.ranking.ranked == 0 and outcome.ranking.rows > 0
    assert any(r.startswith("no loadable champion model in MLflow") for r in outcome.ranking.not_ranked_by_reason)
    with duckdb.connect(str(home / "published.duckdb"), read_only=True) as con:
        assert con.sql("select count(*) from gpu_cost_ranking_history where publish_date = $d",
                       params={"d": driver.FIRST_NIGHT}).fetchall()[0][0] > 0  # last night's rows are kept


def test_champion_whose_model_files_are_gone_falls_back_to_the_former_champion_and_says_why(
    work_home: States, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tasks.model.predict import load_champion
    from tasks.model.tracking import CHAMPION, REGISTERED_MODEL, connect_tracking

    home = work_home.restore("base")
    (model_dir,) = {p.parent for p in (home / "mlflow").rglob("MLmodel")}  # version 1's logged model
    # version 2: a copy of version 1's files registered from another folder and promoted to champion
    client = connect_tracking(configured.resources().tracking_uri, create_experiment=False).client
    copy = shutil.copytree(model_dir, tmp_path / "version-2")
    version_2 = client.create_model_version(REGISTERED_MODEL, source=str(copy))
    client.set_registered_model_alias(REGISTERED_MODEL, CHAMPION, version_2.version)
    loaded = load_champion(configured.resources().tracking_uri, configured.contract())
    assert loaded is not None and (loaded.version, loaded.alias_version) == ("2", "2") and not loaded.is_fallback

    shutil.rmtree(copy)  # version 2's files are gone
    with caplog.at_level(logging.WARNING, logger="gpucost.predict"):
        fallback = load_champion(configured.resources().tracking_uri, configured.contract())
    # version 1 was champion before (promoted by the base state's training) and still loads: it is used, and
    # predictions say so (model_version is the version that produced them, not the alias's)
    assert fallback is not None and (fallback.version, fallback.alias_version) == ("1", "2")
    assert "champion v2 of token-efficiency cannot be loaded" in caplog.text
    assert "using v1 (former champion) instead" in caplog.text
    assert fallback.fallback_reason is not None and "v2" in fallback.fallback_reason
    assert fallback.predict(training_features().head(2))["model_version"].to_list() == ["1", "1"]

    # no version loads at all: no champion (None, a warning, never an exception)
    shutil.rmtree(model_dir)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="gpucost.predict"):
        assert load_champion(configured.resources().tracking_uri, configured.contract()) is None
    assert "cannot be loaded" in caplog.text and "no earlier version loads either" in caplog.text
    # the CLI says so too, and exits non-zero without a traceback
    result = subprocess.run([str(Path(PYTHON).with_name("gpucost")), "predict", str(driver.TELEMETRY), "-o",
                             str(home / "out.csv")], capture_output=True, text=True, timeout=120,
                            env={**os.environ})
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "no `champion` version" in result.stderr
