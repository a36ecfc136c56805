"""Processes, locks and signals, in one place for every layer: which processes are alive (a pid, a process group,
the processes a command started), the lock that keeps two nightly runs apart, and the supervisor that stops a
command's whole process group cleanly. It imports nothing of the project (the command line, gpucost/guard.py,
chooses what runs supervised and what each stop exits with).

Stopping cleanly: a command that starts a Prefect server runs its work in a child process group that a
light parent process supervises, so that SIGTERM (systemd, a container stop), SIGINT (Ctrl-C), or the
out-of-memory killer taking the work leave nothing running.

Why a supervisor: Prefect's temporary API server is a `uvicorn` child started by `prefect` inside the work
process and stopped by an `atexit` hook, which never runs when the process dies of a signal (every SIGTERM
left an orphaned server). Here the work runs as the leader of its own process group; Prefect's server, and
any process the work starts, join that group. The parent (`supervise`, which imports nothing heavy):

- on SIGTERM, SIGINT or SIGHUP sends SIGTERM to the work process, which kills the rest of its group and
  ends (install_worker_handlers); after `grace_seconds` SIGKILLs whatever is left of the group; then prints
  one line saying what was interrupted and that the previous results are still served (nothing is published
  until a publish completes: the published file is replaced atomically);
- when the work dies of a signal it did not send (SIGKILL by the OOM killer), kills the rest of the group,
  and lets the command say so in one line (and remove what the work left half-written);
- dies with its child: the work process gets SIGTERM if the parent is killed (PR_SET_PDEATHSIG), and then
  stops its own group the same way.

The rest of the group is killed (SIGKILL), not asked to stop: Prefect's temporary server answered SIGTERM by
printing its services' cancellation tracebacks over the one line, and it has nothing worth a clean shutdown
(its SQLite state survives a kill, as every write of the work itself does).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

WORKER_ENV = "GPUCOST_WORKER"        # set in the work process: install the handlers, do not supervise again
PR_SET_PDEATHSIG = 1
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def stopped_exit(signum: int) -> int:
    """What a process stopped by signal `signum` exits with, as a shell reports it: 128 + the signal's number
    (README "Exit codes": 130 SIGINT, 143 SIGTERM, 129 SIGHUP, 137 SIGKILL)."""
    return 128 + int(signum)


def pid_alive(pid: int) -> bool:
    """Is process `pid` there (a process of another user counts)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    return True


class RunLockedError(RuntimeError):
    """Another nightly run holds the lock."""


@contextmanager
def run_lock(path: Path) -> Iterator[None]:
    """A lock file so that two nightly runs never overlap (the second one exits, saying who holds it).
    `fcntl.flock` is released by the kernel when the holder dies, so a killed run leaves no stale lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise RunLockedError(
                f"another nightly run (pid {holder}) holds {path}; this run exits without doing anything"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """For `preexec_fn`: the kernel sends `sig` to this child when the process that started it dies
    (Linux only; elsewhere a no-op)."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl: nobody would ever send the signal
        os._exit(stopped_exit(sig))


def group_members(pgid: int) -> list[int]:
    """Live processes (not zombies) in process group `pgid`, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(entry)
        if fields is not None and int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _stat_fields(process: Path) -> list[str] | None:
    """/proc/PID/stat after the command name in parentheses (state ppid pgrp ...), or None once it is gone."""
    try:
        stat = (process / "stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def processes_with_env(name: str, value: str) -> list[int]:
    """Live processes (readable under /proc, not zombies) whose environment has name=value: what a command
    started, whatever process group or session the process moved to (a Prefect worker starts each flow run in
    a session of its own)."""
    wanted = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        fields = _stat_fields(entry)
        if fields is None or fields[0] == "Z":
            continue  # gone, or a zombie: it holds no resources and its parent reaps it
        if wanted in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _signal_group(pgid: int, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@dataclass
class Supervised:
    """What happened to the work process: its exit code, and the signal that stopped it (if any)."""

    returncode: int
    worker_pid: int
    signum: int | None = None          # the signal this supervisor received and passed on
    killed_by: int | None = None       # a signal the work died of that this supervisor did not send
    stopped: int = 0                   # processes of the work's group still running when it was stopped
    seconds: float = 0.0


def supervise(command: list[str], grace_seconds: float, on_stop: Callable[[Supervised], None] | None = None,
              poll_seconds: float = 0.05) -> Supervised:
    """Run `command` (with WORKER_ENV set) as the leader of a new process group and wait for it, passing SIGTERM,
    SIGINT and SIGHUP on to it as SIGTERM (then SIGKILL to the whole group after `grace_seconds`)."""
    started = time.monotonic()
    received: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        received.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    try:
        child = subprocess.Popen(command, env={**os.environ, WORKER_ENV: "1"}, start_new_session=True,
                                 preexec_fn=die_with_parent)
        pgid = child.pid
        deadline: float | None = None
        members_at_stop = 0
        while True:
            if received and deadline is None:
                members_at_stop = len(group_members(pgid))
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(signal.SIGTERM)  # the work kills the rest of its group, then ends
                deadline = time.monotonic() + grace_seconds
            if deadline is not None and time.monotonic() > deadline:
                _signal_group(pgid, signal.SIGKILL)
            if child.poll() is not None:
                break
            time.sleep(poll_seconds)
        # The work process is gone: whatever is left of its group (Prefect's server after a SIGKILL of the
        # work, a grandchild) is killed; after a normal end it gets a moment to finish first.
        returncode = child.returncode
        killed_by = -returncode if returncode < 0 and not received else None
        if killed_by is not None:
            members_at_stop = len(group_members(pgid)) + 1
            _signal_group(pgid, signal.SIGKILL)
        end = time.monotonic() + (grace_seconds if (received or killed_by) else 0.5)
        while group_members(pgid) and time.monotonic() < end:
            time.sleep(poll_seconds)
        _signal_group(pgid, signal.SIGKILL)
        result = Supervised(returncode=returncode, worker_pid=child.pid, signum=received[0] if received else None,
                            killed_by=killed_by, stopped=members_at_stop, seconds=time.monotonic() - started)
        if on_stop is not None and (result.signum is not None or killed_by is not None):
            on_stop(result)
        return result
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def install_worker_handlers() -> None:
    """In the work process (a process group leader): SIGTERM/SIGINT/SIGHUP kill every other process of the
    group (Prefect's server: see the module docstring) and end this one at once, as a kill -9 would: every
    write is already safe against that (one DuckDB transaction per file, the published file replaced whole,
    a training killed midway is cleaned up by the next one). Unwinding instead made Prefect report the crash
    to its server, which was stopping too, and hang on connection retries."""

    def on_signal(signum: int, frame: object) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        devnull = os.open(os.devnull, os.O_WRONLY)  # the supervisor prints the one line; nothing else
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        if os.getpgrp() == os.getpid():
            for pid in group_members(os.getpid()):
                if pid != os.getpid():
                    with suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        os._exit(stopped_exit(signum))

    for sig in STOP_SIGNALS:
        signal.signal(sig, on_signal)

