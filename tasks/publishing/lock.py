"""A lock file so that two nightly runs never overlap (the second one exits, saying who holds it).

`fcntl.flock` is released by the kernel when the holder dies, so a killed run leaves no stale lock."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from tasks.warehouse import WarehouseBusyError, connect


class RunLockedError(RuntimeError):
    """Another nightly run holds the lock."""


@contextmanager
def run_lock(path: Path) -> Iterator[None]:
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


def check_warehouse_free(path: Path) -> None:
    """Raise WarehouseBusyError (naming the process that holds it, e.g. a user's open DuckDB session) now,
    before a run starts, rather than letting every step fail on it in turn.

    Opened read-write (a reader holding the file blocks a writer too) but not migrated, so the check itself
    changes nothing; a damaged file is left to the pre-flight check, which names it with the next step."""

    if not path.exists():
        return
    try:
        connect(path, migrate_schema=False).close()
    except WarehouseBusyError:
        raise
    except duckdb.Error:
        return
