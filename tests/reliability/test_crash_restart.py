"""SIGKILL a real child process at named points of each step, then check what it left behind and that
rerunning the step gives exactly the tables of an uninterrupted run.

After every kill: the warehouse opens; every registered file is in whole (its raw, core and quarantine
rows match the counts recorded for it) and no layer holds rows of an unregistered file; the published
database is byte-for-byte the previous night's and opens; the MLflow `champion` (version 1) still loads.
Then the step reruns in this process and every warehouse table (count and sum of row hashes) equals
the reference state built by running the step once without interruption.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tasks.warehouse import warehouse
from tests.reliability import driver
from tests.reliability.conftest import States, champion_predictions, training_features
from tests.reliability.helpers import (
    PYTHON,
    kill_at_marker,
    published_checksums,
    start_child,
    warehouse_checksums,
    whole_file_violations,
)

CASES = [(step, checkpoint) for step, checkpoints in driver.CHECKPOINTS.items() for checkpoint in checkpoints]


def kill_step_at(states: States, step: str, checkpoint: str, tmp_path: Path) -> None:
    args = [PYTHON, "-m", "tests.reliability.driver", step, "--pause-at", checkpoint,
            "--telemetry-file", str(states.telemetry_file)]
    stderr = tmp_path / "child.stderr"
    kill_at_marker(start_child(args, dict(os.environ), stderr), f"PAUSED {checkpoint}", stderr)


@pytest.mark.parametrize(("step", "checkpoint"), CASES, ids=[c for _, c in CASES])
def test_killed_step_leaves_nothing_half_done_and_rerun_matches(work_home: States, step: str, checkpoint: str,
                                                                tmp_path: Path) -> None:
    from tasks.model.predict import load_champion

    states = work_home
    home = states.restore("base")
    published_before = (home / "published.duckdb").read_bytes()

    kill_step_at(states, step, checkpoint, tmp_path)

    with warehouse() as con:  # opens read-write (replaying DuckDB's WAL) and migrates, as the next run does
        assert whole_file_violations(con) == []
    assert (home / "published.duckdb").read_bytes() == published_before
    assert published_checksums(home / "published.duckdb") == states.published["base"]
    champion = load_champion()
    assert champion is not None and champion.version == "1"
    if step in ("prices", "telemetry"):
        # an ingest cut short never commits half a file; this checkpoint's file is simply not there yet
        interrupted = warehouse_checksums(home / "warehouse.duckdb")
        assert interrupted != states.warehouse[f"after-{step}"]

    driver.run_step(step, states.telemetry_file)

    assert warehouse_checksums(home / "warehouse.duckdb") == states.warehouse[f"after-{step}"]
    assert published_checksums(home / "published.duckdb") == states.published[f"after-{step}"]
    if step == "train":
        # the rerun promotes a model that predicts exactly what the uninterrupted training's champion does
        # (its version number may be higher: a killed training can leave a registered version without alias)
        rerun = champion_predictions(training_features())
        assert rerun.equals(states.champion_predictions["after-train"])
        assert not rerun.equals(states.champion_predictions["base"])
    assert not list(home.glob(".published.duckdb.*"))
