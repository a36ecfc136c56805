"""SIGKILL a real child process at named points of each step, then check what it left behind and that
rerunning the step gives exactly the tables of an uninterrupted run.

After every kill: the warehouse opens; every registered file is in whole (its core and quarantine
rows match the counts recorded for it) and no layer holds rows of an unregistered file; after the landing
zone's recovery (what the next ingest runs first) every registry row has its landed file and every landed file
its registry row (a kill during apply leaves the file landed but not registered: recovery removes it); the published
database is byte-for-byte the previous night's and opens; the MLflow `champion` (version 1) still loads.
Then the step reruns in this process and every warehouse table (count and sum of row hashes) equals
the reference state built by running the step once without interruption.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tasks.warehouse import warehouse
from tests import configured
from tests.reliability import driver
from tests.reliability.conftest import States, champion_predictions, training_features, training_result
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
def test_killed_step_leaves_nothing_half_done_and_rerun_matches(
        work_home: States, step: str, checkpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.model.predict import load_champion

    states = work_home
    home = states.restore("base")
    published_before = (home / "published.duckdb").read_bytes()

    kill_step_at(states, step, checkpoint, tmp_path)

    # opens read-write (replaying DuckDB's WAL) and migrates, as the next run does
    with warehouse(configured.resources().warehouse) as con:
        assert whole_file_violations(con) == []
    assert (home / "published.duckdb").read_bytes() == published_before
    assert published_checksums(home / "published.duckdb") == states.published["base"]
    champion = load_champion(configured.resources().tracking_uri, configured.contract())
    assert champion is not None and champion.version == "1"
    if step in ("prices", "telemetry"):
        # an ingest cut short never commits half a file; this checkpoint's file is simply not there yet
        interrupted = warehouse_checksums(home / "warehouse.duckdb")
        assert interrupted != states.warehouse[f"after-{step}"]

    if step == "train":  # the rerun stands for a later process: what the killed child left is older than it
        import tasks.model.registry as registry

        monkeypatch.setattr(registry, "PROCESS_STARTED_MS", int(time.time() * 1000) + 1)
    driver.run_step(step, states.telemetry_file)

    assert warehouse_checksums(home / "warehouse.duckdb") == states.warehouse[f"after-{step}"]
    assert published_checksums(home / "published.duckdb") == states.published[f"after-{step}"]
    if step == "train":
        # The rerun decides what the uninterrupted training decided, with a model that predicts exactly the same.
        # On this state that is: version 1 (constant-MFU baseline, trained on these same rows) stays champion;
        # ridge is worse than the baseline on at least one CV grouping, so not eligible (selection rule); the
        # baseline refitted on the same rows scores the same as the champion, below the promotion margin, so the
        # new version becomes the challenger.
        reference, rerun = states.trainings["after-train"], training_result(training_features())
        assert (reference.champion, reference.newest, reference.newest_alias) == ("1", "2", "challenger")
        assert (rerun.champion, rerun.newest_alias) == ("1", "challenger")
        assert rerun.newest_predictions.equals(reference.newest_predictions)
        assert champion_predictions(training_features()).equals(states.champion_predictions["after-train"])
        # what the killed training left is explained, not half done: its runs are FAILED (none RUNNING), the
        # version it may have registered is tagged and never aliased; the rerun's version comes after it
        assert (rerun.running_runs, rerun.unaliased_untagged) == (0, ())
        left = ("2",) if checkpoint == "train-version-registered" else ()
        assert rerun.interrupted == left and rerun.newest == str(2 + len(left))
    assert not list(home.glob(".published.duckdb.*"))
