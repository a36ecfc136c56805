"""Concurrent users: two `gpucost run` at once, and a user's session holding the warehouse open.

Real `gpucost` processes. The ones that run flows talk to the session's temporary Prefect API
(PREFECT_API_URL), so no second Prefect server is started per process.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from tests import configured
from tests.reliability.conftest import States
from tests.reliability.helpers import GPUCOST, PYTHON, checksums, start_child, whole_file_violations

# A user's DuckDB session on a file: opens it read-only, says so, then sits idle until killed.
HOLD_OPEN = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
print("HELD", con.execute("select count(*) from information_schema.tables").fetchall()[0][0], flush=True)
time.sleep(600)
"""


def hold_open(path: Path, tmp_path: Path) -> subprocess.Popen:
    child = start_child([PYTHON, "-c", HOLD_OPEN, str(path)], dict(os.environ), tmp_path / f"{path.name}.holder.err")
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.startswith("HELD"), (tmp_path / f"{path.name}.holder.err").read_text()
    return child


def stop(child: subprocess.Popen) -> None:
    child.kill()
    child.wait(timeout=30)


def flow_env(states: States) -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    return {**os.environ, "GPUCOST_HOME": str(states.work), "GPUCOST_CONFIG_DIR": str(states.config),
            "PREFECT_API_URL": str(PREFECT_API_URL.value())}


def test_two_runs_at_once_one_is_refused_and_nothing_is_corrupted(prefect_harness, work_home: States,
                                                                  tmp_path: Path) -> None:
    from tasks.model.predict import load_champion

    states = work_home
    home = states.restore("base")
    reader = hold_open(home / "published.duckdb", tmp_path)  # and a user reads last night's ranking meanwhile
    try:
        env = flow_env(states)
        with contextlib.ExitStack() as files:
            runs = [
                subprocess.Popen([str(GPUCOST), "run"], env=env,
                                 stdout=files.enter_context(open(tmp_path / f"run{i}.out", "w")),
                                 stderr=files.enter_context(open(tmp_path / f"run{i}.err", "w")))
                for i in (1, 2)
            ]
            codes = [run.wait(timeout=300) for run in runs]
    finally:
        stop(reader)
    outputs = [(tmp_path / f"run{i}.out").read_text() + (tmp_path / f"run{i}.err").read_text() for i in (1, 2)]
    assert sorted(codes) == [0, 3], outputs
    winner, loser = (outputs[0], outputs[1]) if codes[0] == 0 else (outputs[1], outputs[0])
    assert "another nightly run (pid" in loser and str(home / "nightly.lock") in loser
    assert "publish: completed" in winner and "train: completed" in winner

    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        assert whole_file_violations(con) == []
        # every input was in the base state already: raw, core, quarantine and features are unchanged
        assert checksums(con, ("raw", "core", "quarantine", "features")) == {
            k: v for k, v in states.warehouse["base"].items() if not k.startswith("marts.")}
    with duckdb.connect(str(home / "published.duckdb"), read_only=True) as con:
        nights = con.sql("select distinct publish_date from gpu_cost_ranking").fetchall()
    assert nights == [(datetime.now(UTC).date(),)]
    champion = load_champion(configured.resources().tracking_uri, configured.contract())
    # the winner trained baseline + ridge; ridge (no GPU-identity features) loses a CV grouping to the constant-MFU
    # baseline, so the selection rule keeps the baseline champion
    assert champion is not None and champion.candidate == "physics_baseline"


BUSY_COMMANDS = [["run"], ["ingest", "prices"], ["ingest", "telemetry"], ["publish"]]


def test_a_session_holding_the_warehouse_is_named_and_every_command_exits(prefect_harness, work_home: States,
                                                                          tmp_path: Path) -> None:
    states = work_home
    home = states.restore("base")
    holder = hold_open(home / "warehouse.duckdb", tmp_path)
    try:  # all at once: each would wait for the others otherwise, and none may hang
        children = {" ".join(cmd): subprocess.Popen([str(GPUCOST), *cmd], env=flow_env(states), text=True,
                                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    for cmd in BUSY_COMMANDS}
        results = {command: (child.communicate(timeout=120), child.returncode) for command, child in children.items()}
    finally:
        stop(holder)
    for command, ((_, stderr), code) in results.items():
        assert code != 0, command
        # the reason is the last thing said, and it names the process to close
        last = " ".join(" ".join(stderr.strip().splitlines()[-3:]).split())
        assert f"error: process {holder.pid} holds the DuckDB file" in last, (command, stderr)
    # `gpucost run` checks before Prefect starts: its own exit status, no traceback, no flow run
    (_, stderr), code = results["run"]
    assert code == 4 and "Traceback" not in stderr and "Flow run" not in stderr, stderr

