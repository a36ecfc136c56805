"""The nightly schedule, end to end: a real `prefect server start` (loopback, state in tmp), the nightly
deployment registered from prefect.yaml's cron and timezone, and the server's own scheduler creating the
upcoming runs, read back through the API: each at 02:00 in the configured timezone."""

from __future__ import annotations

import socket
import time
from zoneinfo import ZoneInfo

from flows.serve import read_deployments, runner_deployments, start_server, stop_server, wait_for_server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nightly_deployment_is_scheduled_at_two_in_its_timezone(tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    spec = next(s for s in read_deployments() if s.name == "nightly")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    server = start_server(
        "127.0.0.1", port, tmp_path / "prefect",
        # the scheduler service normally wakes every 60 s; 1 s keeps the test short
        extra_env={"PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "1", "PREFECT_UI_ENABLED": "false"},
    )
    try:
        wait_for_server(api, timeout=90, process=server)
        with temporary_settings(updates={PREFECT_API_URL: api}):
            [deployment] = runner_deployments([spec])
            deployment_id = deployment.apply()
            with get_client(sync_client=True) as client:
                runs = []
                deadline = time.monotonic() + 40
                while not runs and time.monotonic() < deadline:
                    runs = client.read_flow_runs(
                        deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id]))
                    )
                    time.sleep(0.5)
                read_back = client.read_deployment(deployment_id)
    finally:
        stop_server(server)
    assert [s.schedule.cron for s in read_back.schedules] == ["0 2 * * *"]
    assert runs, "the server created no scheduled runs for the nightly deployment"
    zone = ZoneInfo(spec.timezone)
    starts = sorted(run.expected_start_time.astimezone(zone) for run in runs)
    assert all(run.state_type.value == "SCHEDULED" for run in runs)
    assert all((t.hour, t.minute) == (2, 0) for t in starts), starts
    # one run per night: consecutive runs are a day apart
    assert all((b - a).days == 1 and (b - a).seconds == 0 for a, b in zip(starts, starts[1:], strict=False))
