"""Starting and stopping the real servers the scale-out tests need (PostgreSQL, `mlflow server`,
`prefect server`, `prefect worker`): each on a free loopback port, in its own process group so that a
finaliser can stop it with everything it spawned, even when a test fails."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

import port_for


def stop_servers_on_sigterm() -> None:
    """A SIGTERM to pytest (a CI timeout, `kill`) becomes a KeyboardInterrupt, so the fixtures' finalisers still
    stop the servers they started instead of leaving them orphaned."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        def interrupt(signum: int, frame: object) -> None:
            raise KeyboardInterrupt(f"signal {signum}")

        signal.signal(signal.SIGTERM, interrupt)


def free_port() -> int:
    """A random free TCP port on the loopback interface (never a fixed one: other test runs share the machine)."""
    return int(port_for.select_random())


def start_group(command: Sequence[str], log: Path, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> subprocess.Popen:
    """Start `command` as the leader of a new process group, output to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd=cwd, start_new_session=True)


def stop_group(process: subprocess.Popen, timeout: float = 20.0) -> None:
    """SIGTERM the whole process group, SIGKILL what is left after `timeout` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=timeout)
    # children (uvicorn, a flow-run subprocess) may outlive the leader: kill whatever is left in the group
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=timeout)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def log_tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def wait_until(ready: Callable[[], bool], timeout: float, what: str, process: subprocess.Popen | None = None,
               log: Path | None = None, interval: float = 0.5) -> None:
    """Poll `ready()` until it is true; fail early when `process` exits, with the tail of its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode}:\n{log_tail(log) if log else ''}")
        if ready():
            return
        time.sleep(interval)
    raise TimeoutError(f"{what} not ready within {timeout:.0f} s:\n{log_tail(log) if log else ''}")


def http_ok(url: str) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    return ready
