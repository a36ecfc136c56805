"""What every long-running `gpucost` command does around its work: run it under a supervisor that stops the
whole process group on SIGTERM/SIGINT (tasks/processes.py), check the stores it will touch before it starts
(gpucost/preflight.py), and turn an interrupt or a full disk into one line and a documented exit code."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from typer import Exit as CommandExit

from gpucost.commands import COMMANDS, PROBLEM_EXITS, Exit
from gpucost.preflight import (
    Preflight,
    PreflightError,
    check_stores,
    disk_full_message,
)
from tasks import config_files
from tasks.ingest.registry import IngestAborted, LandingNotWritable, find_aborted
from tasks.processes import WORKER_ENV, Supervised, stopped_exit, supervise
from tasks.publishing.database import remove_half_written
from tasks.publishing.night import check_targets
from tasks.publishing.ownership import ForeignTargetError
from tasks.publishing.parquet import parquet_root
from tasks.ranking.rank import NoOffersError
from tasks.ranking.workloads import load_workloads, require_workloads
from tasks.settings import ConfigError, Resources
from tasks.stores import disk_full_file
from tasks.warehouse import WarehouseBusyError


def grace_seconds() -> float:
    return config_files.settings().signals.stop_grace_seconds


def min_free_mb() -> float:
    return config_files.settings().preflight.min_free_mb


def served_note(started: datetime, published: Path) -> str:
    """What users are reading now: the published file is only ever replaced whole (os.replace)."""
    if not published.exists():
        return "nothing had been published yet"
    at = datetime.fromtimestamp(published.stat().st_mtime, UTC)
    if at >= started:
        return f"this run had already published {published} (at {at:%Y-%m-%d %H:%M:%S} UTC) before it stopped"
    return (f"nothing new was published: the previous results in {published} (published {at:%Y-%m-%d %H:%M} UTC) "
            "are still served")


def stop_line(command: str, result: Supervised, started: datetime, removed: list[Path], published: Path) -> str:
    others = max(result.stopped - 1, 0)
    children = f"; {others} other process(es) of the run stopped with it (Prefect's server included)" if others else ""
    leftover = f"; removed the half-written {', '.join(p.name for p in removed)}" if removed else ""
    if result.signum is not None:
        name = signal.Signals(result.signum).name
        what = f"interrupted: `gpucost {command}` stopped on {name} after {result.seconds:.0f} s"
    else:
        sig = signal.Signals(result.killed_by or signal.SIGKILL).name
        what = (f"`gpucost {command}` was killed by {sig} after {result.seconds:.0f} s "
                "(the out-of-memory killer sends SIGKILL)")
    return f"{what}{children}{leftover}; {served_note(started, published)}"


def run_supervised(argv: list[str]) -> int:
    """The supervising parent: run the command in its own process group; one line if it was stopped."""
    command = " ".join(argv)
    started = datetime.now(UTC)
    published = config_files.resources().published

    def on_stop(result: Supervised) -> None:
        removed = remove_half_written(published, result.worker_pid)
        print(f"error: {stop_line(command, result, started, removed, published)}", file=sys.stderr, flush=True)

    result = supervise([sys.executable, "-m", "gpucost.cli", *argv], grace_seconds(), on_stop)
    if result.signum is not None:
        return stopped_exit(result.signum)
    if result.returncode < 0:
        return 128 - result.returncode
    return result.returncode


def is_worker() -> bool:
    return bool(os.environ.get(WORKER_ENV))


def preflight(command: str, p: Resources) -> Preflight:
    """The stores `command` touches. Fatal problems raise PreflightError; the rest are printed as warnings."""
    stores = COMMANDS[command].stores
    if stores == "warehouse":
        checked = check_stores(p.home, min_free_mb(), warehouse=p.warehouse)
    elif stores == "warehouse+mlflow":
        checked = check_stores(p.home, min_free_mb(), warehouse=p.warehouse, tracking_uri=p.tracking_uri,
                               fatal=("disk", "warehouse", "mlflow"))
    else:  # a night (run, publish, serve): a damaged published file is rebuilt, a damaged MLflow store skips training
        check_publish_targets(p)
        checked = check_stores(p.home, min_free_mb(), warehouse=p.warehouse, published=p.published,
                               tracking_uri=p.tracking_uri)
        check_workloads()
    if command in ("run", "ingest"):  # the landing folder is gpucost's (exit 5) and writable (exit 2)
        from tasks.ingest.landing import check_landing_before_ingest  # start-up time: it loads pyarrow

        check_landing_before_ingest(p.warehouse)
    for problem in checked.notes:
        print(f"warning: {problem.message}", file=sys.stderr, flush=True)
    return checked


def check_publish_targets(p: Resources) -> None:
    """What publish would replace (the published database, the chart, the Parquet folder) is absent or gpucost's:
    raises ForeignTargetError (exit 5) before any work."""
    # start-up time: the publishing and ranking modules load polars, MLflow; `gpucost --help` needs neither

    check_targets(p.published, parquet_root(config_files.ranking().publish, p.home), p.home)


def check_workloads() -> None:
    """config/workloads.toml validated (and not empty) before any work: raises WorkloadConfigError."""

    require_workloads(load_workloads(config_files.workloads(), config_files.ranking()))


# What `guarded` says in one line with its own exit code (a full disk, found in the error's chain, too)
ONE_LINE_ERRORS = (PreflightError, WarehouseBusyError, ConfigError, NoOffersError, ForeignTargetError, IngestAborted,
                   CommandExit)


def said_in_one_line(error: BaseException) -> bool:
    """`guarded` turns `error` into one line (so Prefect's ERROR lines about it would only say it again)."""
    return (isinstance(error, ONE_LINE_ERRORS) or find_aborted(error) is not None
            or (isinstance(error, Exception) and disk_full_file(error) is not None))


@contextmanager
def guarded(fail: Callable[[str, int], NoReturn], home: Path) -> Iterator[None]:
    """Inside a command: a failed pre-flight, a busy warehouse, a bad config file, no offers or a full disk
    give one line and their exit code (README "Exit codes"); `home`: the state folder a full disk is said of."""

    try:
        yield
    except PreflightError as error:
        fail(error.problem.message, PROBLEM_EXITS[error.problem.kind])
    except WarehouseBusyError as error:  # e.g. found by the pre-flight check, which opens the warehouse
        fail(str(error), Exit.BUSY)
    except ConfigError as error:  # e.g. a workloads file emptied since the command started
        fail(str(error), Exit.INPUT)
    except NoOffersError as error:
        fail(str(error), Exit.FAILED)
    except ForeignTargetError as error:  # a publish target or a landing folder gpucost did not make: nothing written
        fail(str(error), Exit.DAMAGED)
    except LandingNotWritable as error:  # a read-only landing folder: unregistered, unquarantined
        fail(str(error), Exit.INPUT)
    except IngestAborted as error:  # the machine failed, not the file: unregistered, read again next run
        fail(str(error), Exit.DISK_FULL)
    except CommandExit:  # the command has said its one line already (its cause would be said twice)
        raise
    except Exception as error:
        stopped = find_aborted(error)  # e.g. closing the warehouse failed too, after the ingest stopped
        if stopped is not None:
            fail(str(stopped), Exit.DISK_FULL)
        file = disk_full_file(error)
        if file is None:
            raise
        fail(disk_full_message(file, home, min_free_mb()), Exit.DISK_FULL)
