"""The team set-up besides `gpucost serve`: a Prefect server, a `process` work pool, `prefect deploy` of
prefect.yaml, and a worker that executes a nightly run triggered through the server's API to completion."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import httpx
import pytest

from tasks.settings import PROJECT_ROOT
from tests.scale.conftest import SERVER_START_TIMEOUT_S
from tests.scale.processes import (
    free_port,
    group_alive,
    http_ok,
    log_tail,
    processes_with_env,
    start_group,
    stop_group,
    stop_servers_on_sigterm,
    wait_until,
)

POOL = "gpucost-local"          # the work pool prefect.yaml's deployments name
NIGHTLY_TIMEOUT_S = 600         # bounded wait for the triggered run (~1-2 min on 2 idle cores)


def prefect_cli(*args: str, env: dict[str, str], log: Path) -> None:
    prefect = Path(sys.executable).with_name("prefect")
    with open(log, "ab") as out:
        result = subprocess.run([str(prefect), "--no-prompt", *args], env=env, cwd=PROJECT_ROOT, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=300)
    assert result.returncode == 0, f"prefect {' '.join(args)} failed:\n{log_tail(log)}"


# The nightly's inputs for this test: one real price catalog and the first telemetry file (the machinery is
# under test here, not the volume; the full sources run in tests/test_readme.py).
SOURCES = """
[[prices]]
path = "data/samples/prices/skypilot_v8_lambda_gpu.csv"
provider = "lambda"
format = "skypilot"

[[telemetry]]
path = "data/samples/telemetry/published_benchmarks.csv"
"""


def test_worker_runs_the_deployed_nightly_triggered_through_the_api(
    tmp_path: Path, baseline_config_dir: Path
) -> None:
    stop_servers_on_sigterm()
    home = tmp_path / "home"
    config = tmp_path / "config"
    shutil.copytree(baseline_config_dir, config)
    (config / "sources.toml").write_text(SOURCES, encoding="utf-8")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {**os.environ,
           "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_UI_ENABLED": "false", "PREFECT_SERVER_EPHEMERAL_ENABLED": "false",
           "GPUCOST_HOME": str(home), "GPUCOST_CONFIG_DIR": str(config),
           "PREFECT_WORKER_QUERY_SECONDS": "2"}  # the worker polls for runs every 2 s instead of 10
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("PREFECT_API_URL", None)
    server_log, worker_log, cli_log = tmp_path / "server.log", tmp_path / "worker.log", tmp_path / "cli.log"
    prefect = str(Path(sys.executable).with_name("prefect"))
    began = time.monotonic()
    server = start_group([prefect, "server", "start", "--host", "127.0.0.1", "--port", str(port)], server_log,
                         env=env, cwd=tmp_path)
    worker = None
    try:
        wait_until(http_ok(f"{api}/health"), SERVER_START_TIMEOUT_S, "prefect server", server, server_log)
        print(f"prefect server up after {time.monotonic() - began:.1f} s")
        client_env = {**env, "PREFECT_API_URL": api}
        prefect_cli("work-pool", "create", POOL, "--type", "process", env=client_env, log=cli_log)
        prefect_cli("deploy", "--all", env=client_env, log=cli_log)
        with httpx.Client(base_url=api, timeout=30) as http:
            nightly = http.get("/deployments/name/nightly/nightly").raise_for_status().json()
            assert nightly["work_pool_name"] == POOL
            # prefect.yaml's schedule was deployed ...
            assert [s["schedule"]["cron"] for s in nightly["schedules"]] == ["0 2 * * *"]
            # ... and is paused here, so that only the run this test triggers executes (whatever the hour)
            for schedule in nightly["schedules"]:
                http.patch(f"/deployments/{nightly['id']}/schedules/{schedule['id']}",
                           json={"active": False}).raise_for_status()
            worker = start_group([prefect, "worker", "start", "--pool", POOL, "--type", "process", "--limit", "1"],
                                 worker_log, env=client_env, cwd=PROJECT_ROOT)
            print(f"work pool created and prefect.yaml deployed after {time.monotonic() - began:.1f} s")
            triggered = datetime.now(UTC)
            started = time.monotonic()
            run = http.post(f"/deployments/{nightly['id']}/create_flow_run", json={}).raise_for_status().json()
            state = run["state"]["type"]
            while state not in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
                assert time.monotonic() - started < NIGHTLY_TIMEOUT_S, (
                    f"nightly still {state} after {NIGHTLY_TIMEOUT_S} s:\n{log_tail(worker_log)}")
                assert worker.poll() is None, f"the worker exited:\n{log_tail(worker_log)}"
                time.sleep(1)
                state = http.get(f"/flow_runs/{run['id']}").raise_for_status().json()["state"]["type"]
            wall = time.monotonic() - started
            assert state == "COMPLETED", f"nightly ended {state}:\n{log_tail(worker_log, 60)}"
            print(f"nightly through the process worker: {wall:.1f} s from trigger to Completed")
    finally:
        for process in (worker, server):
            if process is not None:
                stop_group(process)
        for pid in processes_with_env("GPUCOST_HOME", str(home)):  # e.g. a flow-run process in its own session
            os.kill(pid, 9)

    # no process of this set-up is left: server, worker and the flow-run process they started
    assert not group_alive(server.pid) and not group_alive(worker.pid)
    assert processes_with_env("GPUCOST_HOME", str(home)) == []
    # the run published a new database in GPUCOST_HOME, with tonight's ranking by the model the run trained
    published = home / "published.duckdb"
    assert published.exists() and datetime.fromtimestamp(published.stat().st_mtime, UTC) > triggered
    with duckdb.connect(str(published), read_only=True) as con:
        ranked, dates, versions = con.sql(
            "select count(*) filter (where rank_by_cost is not null), count(distinct publish_date), "
            "list(distinct model_version) from gpu_cost_ranking").fetchall()[0]
        champions = con.sql("select version from model_versions where is_champion").fetchall()
    assert ranked > 0 and dates == 1
    assert champions == [("1",)] and versions == ["1"]  # a fresh MLflow store: the run's training made v1


@pytest.fixture(autouse=True)
def _no_ephemeral_prefect(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test talks to its own server only."""
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
