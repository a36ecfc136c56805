"""`gpucost serve`: what the nightly schedule needs on one machine.

Starts a local Prefect server (`prefect server start`, state under GPUCOST_HOME) and serves every
deployment of prefect.yaml from this process (`prefect.serve`), the nightly one on its cron schedule.
Stops the server when interrupted."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tasks import config
from tasks.interrupts import die_with_parent
from tasks.settings import PROJECT_ROOT, paths

PREFECT_YAML = PROJECT_ROOT / "prefect.yaml"


@dataclass(frozen=True)
class DeploymentSpec:
    name: str
    entrypoint: str                 # "flows/nightly.py:nightly"
    cron: str | None = None
    timezone: str | None = None
    description: str | None = None

    def load_flow(self) -> Any:
        """Import the flow object the entrypoint names (flows/x.py:name -> flows.x.name)."""
        file, _, attribute = self.entrypoint.partition(":")
        module = importlib.import_module(file.removesuffix(".py").replace("/", "."))
        return getattr(module, attribute)


def read_deployments(path: Path = PREFECT_YAML) -> list[DeploymentSpec]:
    """The deployments of prefect.yaml; GPUCOST_NIGHTLY_CRON / GPUCOST_NIGHTLY_TIMEZONE override nightly's."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    specs = []
    for entry in document.get("deployments", []):
        schedule = next(iter(entry.get("schedules") or []), {})
        cron, timezone = schedule.get("cron"), schedule.get("timezone")
        if entry["name"] == "nightly":
            cron = os.environ.get("GPUCOST_NIGHTLY_CRON", cron)
            timezone = os.environ.get("GPUCOST_NIGHTLY_TIMEZONE", timezone)
        specs.append(DeploymentSpec(entry["name"], entry["entrypoint"], cron, timezone, entry.get("description")))
    return specs


def wait_for_server(api_url: str, timeout: float = 120.0, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"prefect server exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(f"{api_url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"the Prefect server at {api_url} did not answer within {timeout:.0f} s")


def start_server(host: str, port: int, prefect_home: Path, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    """`prefect server start` as a child process with its state (SQLite database) under prefect_home."""
    prefect_home.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": os.environ.get("PREFECT_UI_ENABLED", "true"),
        **(extra_env or {}),
    }
    env.pop("PREFECT_API_URL", None)
    prefect = Path(sys.executable).with_name("prefect")
    return subprocess.Popen(
        [str(prefect), "server", "start", "--host", host, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL if not os.environ.get("GPUCOST_SERVER_LOGS") else None,
        stderr=subprocess.STDOUT if not os.environ.get("GPUCOST_SERVER_LOGS") else None,
        start_new_session=True,
        preexec_fn=die_with_parent,  # a killed `gpucost serve` leaves no orphaned server
    )


def stop_server(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def runner_deployments(specs: list[DeploymentSpec]) -> list[Any]:
    from prefect.schedules import Cron

    deployments = []
    for spec in specs:
        schedules = [Cron(spec.cron, timezone=spec.timezone or "UTC")] if spec.cron else None
        deployments.append(
            spec.load_flow().to_deployment(name=spec.name, schedules=schedules, description=spec.description)
        )
    return deployments


def serve() -> None:
    settings = config.settings().serve
    host, port = settings.host, settings.port
    api_url = f"http://{host}:{port}/api"
    process = start_server(host, port, paths().prefect_home)
    try:
        wait_for_server(api_url, process=process)
        print(f"Prefect server: http://{host}:{port} (state in {paths().prefect_home})", flush=True)
        from prefect import serve as prefect_serve
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: api_url}):
            specs = read_deployments()
            nightly = next(s for s in specs if s.name == "nightly")
            print(f"nightly runs on cron '{nightly.cron}' ({nightly.timezone}); Ctrl-C stops", flush=True)
            prefect_serve(*runner_deployments(specs))
    finally:
        stop_server(process)
