"""Signals sent to a real `gpucost` process that started its own temporary Prefect server: SIGTERM (systemd,
a container stop), SIGINT (Ctrl-C), SIGKILL of the work (what the out-of-memory killer sends) and of the
command itself. Each checks the one line, the exit code, that what users read did not change, and that no
process of the run is left anywhere (by the GPUCOST_HOME in its environment, wherever it was re-parented)."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest

from tests.reliability import driver
from tests.reliability.conftest import States
from tests.reliability.helpers import GPUCOST, assert_one_line, processes_of, whole_file_violations

STOP_WITHIN_S = 8.0   # config/settings.toml [signals] stop_grace_seconds = 5, plus the supervisor's polling


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def own_server_env(states: States, **extra: str) -> dict[str, str]:
    """The command starts its own temporary Prefect server (not the session's test server)."""
    env = {**os.environ, "GPUCOST_HOME": str(states.work), "GPUCOST_CONFIG_DIR": str(states.config),
           "PREFECT_SERVER_EPHEMERAL_ENABLED": "true", **extra}
    env.pop("PREFECT_API_URL", None)
    return env


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen([str(GPUCOST), *args], env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_for(what: str, ready, child: subprocess.Popen, log: Path, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if child.poll() is not None:
            raise AssertionError(f"ended ({child.returncode}) before {what}: {log.read_text()[-3000:]}")
        time.sleep(0.2)
    child.kill()
    raise AssertionError(f"no {what} within {timeout} s: {log.read_text()[-3000:]}")


def server_running(home: Path) -> bool:
    return any("uvicorn" in cmd or "server start" in cmd for _, cmd in processes_of(home))


def nothing_left(home: Path, within: float = 10.0) -> list[tuple[int, str]]:
    deadline = time.monotonic() + within
    while (left := processes_of(home)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def stop_and_time(child: subprocess.Popen, sig: int) -> float:
    started = time.monotonic()
    os.kill(child.pid, sig)
    child.wait(timeout=60)
    return time.monotonic() - started


def worker_of(supervisor: int) -> int:
    """The work process: the supervisor's only child."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == supervisor:
                return int(entry.name)
    raise AssertionError(f"process {supervisor} has no child")


def aliases(home: Path) -> dict[str, str]:
    """Alias -> version of the registered model (champion, challenger): what a training decides."""
    from mlflow.tracking import MlflowClient

    from tests.reliability.conftest import close_mlflow_connections

    uri = f"sqlite:///{home / 'mlflow' / 'mlflow.db'}"
    try:
        model = MlflowClient(tracking_uri=uri, registry_uri=uri).get_registered_model("token-efficiency")
        return {alias: str(version) for alias, version in model.aliases.items()}
    finally:
        close_mlflow_connections()


def progress_line(log: Path, start: str) -> bool:
    """One of the command's own progress lines (`HH:MM:SS ingest prices: file 1 of 2: ...`) has been printed:
    Prefect's own flow-run lines are not shown on the command line (gpucost/console.py)."""
    return any(line[9:].startswith(start) for line in log.read_text().splitlines())


def test_sigterm_during_run_stops_the_run_and_its_prefect_server(work_home: States, tmp_path: Path) -> None:
    home = work_home.restore("base")
    published = digest(home / "published.duckdb")
    log = tmp_path / "run.log"
    child = start(["run"], own_server_env(work_home), log)
    # the base state's two price files are already ingested: the run is in its price ingest, inside the nightly
    # flow, with its own Prefect server
    wait_for("the price ingest", lambda: progress_line(log, "ingest prices: file 1 of 2: "), child, log)
    assert server_running(home)
    seconds = stop_and_time(child, signal.SIGTERM)
    assert child.returncode == 143, log.read_text()[-3000:]
    assert seconds < STOP_WITHIN_S, seconds
    line = assert_one_line(log.read_text(), "interrupted: `gpucost run` stopped on SIGTERM",
                           "Prefect's server included", "the previous results in", "are still served")
    assert str(home / "published.duckdb") in line
    assert nothing_left(home, within=1.0) == []
    assert digest(home / "published.duckdb") == published
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        assert whole_file_violations(con) == []


def test_sigint_during_training_stops_everything_and_registers_no_champion(work_home: States,
                                                                          tmp_path: Path) -> None:
    home = work_home.restore("base")
    before = aliases(home)
    assert before == {"champion": "1"}  # the base state: one training, baseline only
    published = digest(home / "published.duckdb")
    log = tmp_path / "run.log"
    child = start(["run"], own_server_env(work_home), log)
    # the first of the two candidates is being cross-validated: the training registers its version only after
    # both (an uninterrupted training of this state registers version 2 with an alias: see crash_restart)
    wait_for("training", lambda: progress_line(log, "train: candidate 1 of 2: "), child, log)
    seconds = stop_and_time(child, signal.SIGINT)
    assert child.returncode == 130, log.read_text()[-3000:]
    assert seconds < STOP_WITHIN_S, seconds
    assert_one_line(log.read_text(), "interrupted: `gpucost run` stopped on SIGINT", "are still served")
    assert nothing_left(home, within=1.0) == []
    assert digest(home / "published.duckdb") == published
    assert aliases(home) == before  # nothing promoted, no challenger either; a version left half-registered
    # (none here: it was stopped before) is tagged by the next training (tests/reliability/test_crash_restart.py)


def new_prices_config(states: States, tmp_path: Path) -> Path:
    """The reliability config whose sources.toml names the two price files the base state lacks, the small one
    first: the ingest's progress line for file 1 comes while file 2 (932 rows) is being read and stored."""
    config = shutil.copytree(states.config, tmp_path / "config")
    (config / "sources.toml").write_text("\n".join(
        f'[[prices]]\npath = "{driver.PRICES / name}"\nprovider = "{provider}"\nformat = "{fmt}"\n'
        for name, provider, fmt in reversed(driver.NEW_PRICE_FILES)), encoding="utf-8")
    return config


@pytest.mark.parametrize("victim", ["work", "command"])
def test_sigkill_of_an_ingest_leaves_no_orphan_and_no_half_file(work_home: States, tmp_path: Path,
                                                                victim: str) -> None:
    """`work`: the OOM killer takes the process doing the work (the biggest); `command`: kill -9 of the
    `gpucost` process itself (its work and server follow it through PR_SET_PDEATHSIG)."""
    home = work_home.restore("base")
    published = digest(home / "published.duckdb")
    log = tmp_path / "ingest.log"
    env = own_server_env(work_home, GPUCOST_CONFIG_DIR=str(new_prices_config(work_home, tmp_path)))
    child = start(["ingest", "prices"], env, log)
    wait_for("the first file", lambda: progress_line(log, "ingest prices: file 1 of 2: "), child, log)
    assert server_running(home)
    os.kill(worker_of(child.pid) if victim == "work" else child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    if victim == "work":
        assert child.returncode == 137, log.read_text()[-3000:]
        assert_one_line(log.read_text(), "`gpucost ingest prices", "was killed by SIGKILL",
                        "out-of-memory killer", "are still served")
    else:
        assert child.returncode == -signal.SIGKILL
    assert nothing_left(home) == []
    assert digest(home / "published.duckdb") == published
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        assert whole_file_violations(con) == []  # every file is in whole or not at all
        registered = [name for (name,) in con.sql(
            "select source_file from raw.ingested_files where dataset = 'prices' order by ingested_at, source_file"
        ).fetchall()]
    base = [str(driver.PRICES / name) for name, _, _ in driver.BASE_PRICE_FILES]
    first, second = (str(driver.PRICES / name) for name, _, _ in reversed(driver.NEW_PRICE_FILES))
    # the first file was in (its line was printed); the second is in whole or not at all
    assert sorted(registered) in (sorted([*base, first]), sorted([*base, first, second])), registered
