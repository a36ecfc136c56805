"""Bytes and rate of long downloads on a terminal (rich); nothing in CI or when output is redirected."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from tasks.fetch.http import Progress as ProgressCallback


def quiet() -> bool:
    return bool(os.environ.get("CI")) or not Console(stderr=True).is_terminal


@contextmanager
def transfer_progress(provider: str) -> Iterator[ProgressCallback | None]:
    """A callback (file name, total bytes or None, bytes received) drawing one bar per file."""
    if quiet():
        yield None
        return
    columns = (TextColumn(f"{provider} {{task.description}}"), BarColumn(), DownloadColumn(),
               TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bars:
        tasks: dict[str, TaskID] = {}

        def advance(name: str, total: int | None, received: int) -> None:
            if name not in tasks:
                tasks[name] = bars.add_task(name, total=total)
            bars.advance(tasks[name], received)

        yield advance
