"""`gpucost serve`: what the nightly schedule needs on one machine, by Prefect's own deployment machinery.

The same steps as the team set-up (README "Scaling out"), as child processes of this one:
1. `prefect server start` (state under GPUCOST_HOME/prefect);
2. the `process` work pool that prefect.yaml's deployments name, created if missing;
3. `prefect deploy --all`: Prefect reads prefect.yaml itself (schedules, the nightly's concurrency limit and
   collision strategy, work pool); GPUCOST_NIGHTLY_CRON / GPUCOST_NIGHTLY_TIMEZONE then replace the deployed
   nightly schedule through Prefect's API;
4. `prefect worker start --pool gpucost-local` (started as soon as the pool exists, so that it imports while
   step 3 runs): executes every run, scheduled or triggered, each in a subprocess of its own.
SIGTERM, SIGINT or SIGHUP stops the flow runs the worker started, the worker and the server: nothing is left."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from tasks import config_files
from tasks.processes import STOP_SIGNALS, die_with_parent, processes_with_env, stopped_exit
from tasks.settings import PROJECT_ROOT, Environment, Resources

WORK_POOL = "gpucost-local"             # the pool every deployment of prefect.yaml names (tests/test_definitions.py)
NIGHTLY = "nightly/nightly"             # flow name / deployment name
SERVE_MARK = "GPUCOST_SERVE_PID"        # in the worker's environment, so in every flow run it starts


class ServeError(RuntimeError):
    """A part of the set-up did not start or stopped: said in one line (gpucost/cli.py)."""


class Stopped(BaseException):
    """A stop signal arrived; BaseException so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def wait_for_server(api_url: str, timeout: float = 120.0, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise ServeError(f"prefect server exited with status {process.returncode} "
                             "(GPUCOST_SERVER_LOGS=1 shows its log)")
        try:
            with urllib.request.urlopen(f"{api_url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise ServeError(f"the Prefect server at {api_url} did not answer within {timeout:.0f} s")


def check_port_free(host: str, port: int) -> None:
    """Before the server starts: with the port taken by another Prefect server, the health check would answer
    and this one would deploy into that server."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: TIME_WAIT is no obstacle
        try:
            probe.bind((host, port))
        except OSError as error:
            raise ServeError(f"{host}:{port} is in use ({error.strerror}): another `gpucost serve` or Prefect "
                             "server? Choose another in config/settings.toml [serve] port") from None


def prefect_env(prefect_home: Path, api_url: str | None = None) -> dict[str, str]:
    """The environment of every Prefect child: state under prefect_home, this server's API (when given)."""
    env = {
        **os.environ,
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": os.environ.get("PREFECT_UI_ENABLED", "true"),
    }
    env.pop("PREFECT_API_URL", None)
    if api_url is not None:
        env["PREFECT_API_URL"] = api_url
    return env


def prefect_command(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("prefect")), *args]


def start_child(command: list[str], env: dict[str, str], quiet: bool) -> subprocess.Popen[bytes]:
    """A child in a session of its own (a Ctrl-C on the terminal reaches this process only, which stops it)
    that the kernel stops if this process dies (die_with_parent)."""
    return subprocess.Popen(
        command, env=env, cwd=PROJECT_ROOT,
        stdout=subprocess.DEVNULL if quiet else None, stderr=subprocess.STDOUT if quiet else None,
        stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent,
    )


def start_server(host: str, port: int, prefect_home: Path) -> subprocess.Popen[bytes]:
    """`prefect server start` with its state (SQLite database) under prefect_home."""
    prefect_home.mkdir(parents=True, exist_ok=True)
    return start_child(prefect_command("server", "start", "--host", host, "--port", str(port)),
                       prefect_env(prefect_home), quiet=not os.environ.get("GPUCOST_SERVER_LOGS"))


def ensure_work_pool(client: Any) -> None:
    """Create the `process` work pool with Prefect's default job template (as `prefect work-pool create` does),
    unless it exists: a pool someone edited is left as it is."""
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.workers.process import ProcessWorker

    try:
        client.read_work_pool(WORK_POOL)
    except ObjectNotFound:
        client.create_work_pool(WorkPoolCreate(
            name=WORK_POOL, type="process", base_job_template=ProcessWorker.get_default_base_job_template()))


def deploy_all(env: dict[str, str]) -> None:
    """`prefect deploy --all` from the project folder: Prefect reads prefect.yaml."""
    result = subprocess.run(prefect_command("--no-prompt", "deploy", "--all"), env=env, cwd=PROJECT_ROOT,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, preexec_fn=die_with_parent)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()
        raise ServeError("prefect deploy --all failed: " + " | ".join(output[-5:]))


def override_nightly_schedule(client: Any) -> None:
    """GPUCOST_NIGHTLY_CRON / GPUCOST_NIGHTLY_TIMEZONE replace the deployed nightly schedule (Prefect then
    drops the runs it had scheduled from the old one)."""
    from prefect.client.schemas.schedules import CronSchedule

    environment = Environment.current()
    cron, timezone = environment.nightly_cron, environment.nightly_timezone
    if not cron and not timezone:
        return
    deployment = client.read_deployment_by_name(NIGHTLY)
    for deployed in deployment.schedules:
        current = deployed.schedule
        client.update_deployment_schedule(deployment.id, deployed.id, schedule=CronSchedule(
            cron=cron or current.cron, timezone=timezone or current.timezone))


def describe(client: Any) -> list[str]:
    """What is deployed, read back from the server."""
    deployments = client.read_deployments()
    nightly = client.read_deployment_by_name(NIGHTLY)
    lines = [f"deployed from prefect.yaml to work pool {WORK_POOL}: "
             + ", ".join(sorted(d.name for d in deployments))]
    schedules = "; ".join(f"cron '{s.schedule.cron}' ({s.schedule.timezone})" for s in nightly.schedules)
    limit = nightly.global_concurrency_limit
    if limit is not None:
        strategy = nightly.concurrency_options.collision_strategy.value if nightly.concurrency_options else "ENQUEUE"
        schedules += f", at most {limit.limit} at a time (collision strategy {strategy})"
    lines.append(f"nightly runs on {schedules}; Ctrl-C stops")
    return lines


def stop_all(children: list[subprocess.Popen[bytes]], mark: str) -> None:
    """Kill the flow runs the worker started (each in a session of its own, beyond any process group: found by
    the mark in their environment), then the worker's and the server's process groups. Killed, not asked to
    stop, as tasks/processes.py explains: every write of a run is safe against a kill, the server's SQLite
    state survives it, and a SIGTERM made both print cancellation tracebacks over the supervisor's one line."""
    for pid in processes_with_env(SERVE_MARK, mark):
        _kill(pid, signal.SIGKILL)
    for child in children:
        _killpg(child.pid, signal.SIGKILL)
        child.wait()
    for pid in processes_with_env(SERVE_MARK, mark):  # a run the worker was starting meanwhile
        _kill(pid, signal.SIGKILL)


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def serve(resources: Resources) -> None:
    settings = config_files.settings().serve
    host, port = settings.host, settings.port
    api_url = f"http://{host}:{port}/api"
    prefect_home, mark = resources.prefect_home, str(os.getpid())

    def on_signal(signum: int, frame: object) -> None:
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    children: list[subprocess.Popen[bytes]] = []
    try:
        check_port_free(host, port)
        children.append(server := start_server(host, port, prefect_home))
        wait_for_server(api_url, process=server)
        print(f"Prefect server: http://{host}:{port} (state in {prefect_home})", flush=True)
        env = {**prefect_env(prefect_home, api_url), SERVE_MARK: mark}
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
            ensure_work_pool(client)
            # the worker starts (imports) while Prefect deploys: no run is due before the schedule is final
            children.append(worker := start_child(
                prefect_command("worker", "start", "--pool", WORK_POOL, "--type", "process"), env, quiet=False))
            deploy_all(env)
            override_nightly_schedule(client)
            for line in describe(client):
                print(line, flush=True)
        while True:
            for child, what in ((server, "prefect server"), (worker, "prefect worker")):
                if child.poll() is not None:
                    raise ServeError(f"{what} exited with status {child.returncode}")
            time.sleep(1)
    except Stopped as stop:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        stop_all(children, mark)
        # the supervisor prints the one line saying what stopped (gpucost/guard.py)
        os._exit(stopped_exit(stop.signum))
    finally:
        for sig in STOP_SIGNALS:  # a signal now would cut the clean-up short
            signal.signal(sig, signal.SIG_IGN)
        stop_all(children, mark)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
