"""`gpucost serve`, end to end, which is the team set-up in one command: a Prefect server, the `process` work
pool, `prefect deploy --all` of prefect.yaml, and a worker. Through the server's API: the nightly schedule
(overridden by GPUCOST_NIGHTLY_CRON / GPUCOST_NIGHTLY_TIMEZONE) is what the server's scheduler uses; two
nightly runs triggered at once are one Completed run (a new published.duckdb) and one Cancelled by the
declared concurrency limit, never Failed; SIGTERM as a third run starts stops everything at once, with one
line, and leaves no process running."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import httpx
import pytest

from gpucost.serve import WORK_POOL
from tasks.processes import processes_with_env
from tests.reliability.helpers import assert_one_line
from tests.scale.conftest import SERVER_START_TIMEOUT_S
from tests.scale.processes import free_port, log_tail, start_group, stop_group, stop_servers_on_sigterm, wait_until

NIGHTLY_TIMEOUT_S = 600         # bounded wait for the triggered runs (~1 min on 2 idle cores)
FINAL = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")
STOP_WITHIN_S = 8.0             # config/settings.toml [signals] stop_grace_seconds = 5, plus the supervisor's polling
ZONE = "Europe/Paris"

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


def trigger(http: httpx.Client, deployment_id: str) -> dict:
    """A run of the deployment, now; retried on 503, which the server's SQLite store answers when busy (as
    Prefect's own client retries it)."""
    for _ in range(10):
        response = http.post(f"/deployments/{deployment_id}/create_flow_run", json={})
        if response.status_code != 503:
            return response.raise_for_status().json()
        time.sleep(0.5)
    return response.raise_for_status().json()


def flow_runs(http: httpx.Client, deployment_id: str, state: str | None = None) -> list[dict]:
    query: dict = {"deployments": {"id": {"any_": [deployment_id]}}}
    if state:
        query["flow_runs"] = {"state": {"type": {"any_": [state]}}}
    return http.post("/flow_runs/filter", json=query).raise_for_status().json()


def serve_config(baseline: Path, config: Path, port: int) -> Path:
    """The baseline config with this test's sources and `gpucost serve` on `port`."""
    shutil.copytree(baseline, config)
    (config / "sources.toml").write_text(SOURCES, encoding="utf-8")
    settings = config / "settings.toml"
    settings.write_text(re.sub(r"(?m)^port = \d+", f"port = {port}", settings.read_text(encoding="utf-8")),
                        encoding="utf-8")
    return config


def test_serve_on_a_port_in_use_says_so_in_one_line(tmp_path: Path, baseline_config_dir: Path) -> None:
    """Before any server starts: with the port taken (another `gpucost serve`), the health check would answer
    and serve would deploy into the other server."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = serve_config(baseline_config_dir, tmp_path / "config", port)
        env = {**os.environ, "GPUCOST_HOME": str(tmp_path / "home"), "GPUCOST_CONFIG_DIR": str(config)}
        result = subprocess.run([str(Path(sys.executable).with_name("gpucost")), "serve"], env=env,
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: 127.0.0.1:{port} is in use (Address already in use): another `gpucost serve` or Prefect server? "
        "Choose another in config/settings.toml [serve] port")


def test_serve_deploys_prefect_yaml_and_its_worker_runs_one_nightly_at_a_time(
    tmp_path: Path, baseline_config_dir: Path
) -> None:
    stop_servers_on_sigterm()
    home = tmp_path / "home"
    port = free_port()
    config = serve_config(baseline_config_dir, tmp_path / "config", port)
    api = f"http://127.0.0.1:{port}/api"
    # a schedule that is not prefect.yaml's, twelve hours from now (no scheduled run starts during the test)
    hour = (datetime.now(ZoneInfo(ZONE)).hour + 12) % 24
    cron = f"30 {hour} * * *"
    env = {**os.environ,
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false",
           "GPUCOST_HOME": str(home), "GPUCOST_CONFIG_DIR": str(config),
           "GPUCOST_NIGHTLY_CRON": cron, "GPUCOST_NIGHTLY_TIMEZONE": ZONE,
           "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "1",  # the scheduler wakes every 1 s instead of 60
           "PREFECT_WORKER_QUERY_SECONDS": "2"}  # the worker polls for runs every 2 s instead of 10
    for name in ("MLFLOW_TRACKING_URI", "PREFECT_API_URL", "PREFECT_HOME"):
        env.pop(name, None)
    log = tmp_path / "serve.log"
    began = time.monotonic()
    serve = start_group([str(Path(sys.executable).with_name("gpucost")), "serve"], log, env=env, cwd=tmp_path)
    try:
        with httpx.Client(base_url=api, timeout=30) as http:
            def ready() -> bool:
                """prefect.yaml deployed (serve has said how the nightly runs) and the worker polling"""
                if "Ctrl-C stops" not in log.read_text(errors="replace"):
                    return False
                try:
                    return http.get(f"/work_pools/{WORK_POOL}").json().get("status") == "READY"
                except (httpx.HTTPError, ValueError):
                    return False

            wait_until(ready, SERVER_START_TIMEOUT_S + 120, "gpucost serve", serve, log)
            print(f"server up, prefect.yaml deployed, worker polling after {time.monotonic() - began:.1f} s")
            nightly = http.get("/deployments/name/nightly/nightly").raise_for_status().json()
            assert nightly["work_pool_name"] == WORK_POOL
            # prefect.yaml's limit and collision strategy, as `prefect deploy` read them
            assert nightly["global_concurrency_limit"]["limit"] == 1
            assert nightly["concurrency_options"] == {"collision_strategy": "CANCEL_NEW", "grace_period_seconds": None}
            # the override replaced prefect.yaml's schedule, and the server's scheduler uses it: every upcoming
            # run at HH:30 in Paris, one a day
            assert [(s["schedule"]["cron"], s["schedule"]["timezone"]) for s in nightly["schedules"]] == [(cron, ZONE)]
            wait_until(lambda: bool(flow_runs(http, nightly["id"], "SCHEDULED")), 40, "the nightly's scheduled runs",
                       serve, log)
            starts = sorted(datetime.fromisoformat(r["expected_start_time"]).astimezone(ZoneInfo(ZONE))
                            for r in flow_runs(http, nightly["id"], "SCHEDULED"))
            assert {(t.hour, t.minute) for t in starts} == {(hour, 30)}, starts
            assert all((b - a).days == 1 and (b - a).seconds == 0 for a, b in itertools.pairwise(starts))

            # two nightly runs triggered at once: the server lets one start and cancels the other
            triggered = datetime.now(UTC)
            started = time.monotonic()
            runs = [trigger(http, nightly["id"]) for _ in range(2)]
            states = {}
            while len(states) < 2 or any(s["type"] not in FINAL for s in states.values()):
                assert time.monotonic() - started < NIGHTLY_TIMEOUT_S, f"runs still {states}:\n{log_tail(log)}"
                assert serve.poll() is None, f"gpucost serve exited:\n{log_tail(log)}"
                time.sleep(1)
                states = {r["id"]: http.get(f"/flow_runs/{r['id']}").raise_for_status().json()["state"]
                          for r in runs}
            wall = time.monotonic() - started
            by_type = {state["type"]: (run_id, state) for run_id, state in states.items()}
            assert sorted(by_type) == ["CANCELLED", "COMPLETED"], f"{states}\n{log_tail(log, 60)}"
            cancelled_id, cancelled = by_type["CANCELLED"]
            assert cancelled["message"] == "Deployment concurrency limit reached."
            history = http.get("/flow_run_states/", params={"flow_run_id": cancelled_id}).raise_for_status().json()
            assert "RUNNING" not in {state["type"] for state in history}  # cancelled before it started
            print(f"nightly through serve's worker: {wall:.1f} s from trigger to Completed (the other Cancelled)")
            published_at = (home / "published.duckdb").stat().st_mtime

            # SIGTERM as a third nightly starts: serve stops its flow run, its worker and its server
            third = trigger(http, nightly["id"])
        # its process, started by the worker in a session of its own
        wait_until(lambda: bool(processes_with_env("PREFECT__FLOW_RUN_ID", third["id"])), 120,
                   "the third nightly's process", serve, log)
        stopping = time.monotonic()
        os.kill(serve.pid, signal.SIGTERM)  # `systemctl stop`; Ctrl-C (SIGINT) takes the same path
        assert serve.wait(timeout=60) == 143, log_tail(log)
        assert time.monotonic() - stopping < STOP_WITHIN_S
        assert processes_with_env("GPUCOST_HOME", str(home)) == [], log_tail(log)
        assert_one_line(log.read_text(errors="replace"), "interrupted: `gpucost serve` stopped on SIGTERM")
    finally:
        stop_group(serve)
        for pid in processes_with_env("GPUCOST_HOME", str(home)):  # only after a failure above
            os.kill(pid, signal.SIGKILL)

    # the completed run published a new database in GPUCOST_HOME, with tonight's ranking by the model it
    # trained; the killed third run left it as it was
    published = home / "published.duckdb"
    assert datetime.fromtimestamp(published_at, UTC) > triggered and published.stat().st_mtime == published_at
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
