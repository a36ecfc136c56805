"""The registry of ingested files, keyed by content hash: the same bytes are never ingested twice."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb

from tasks.stores import disk_full_file
from tasks.warehouse import execute

# I/O errors that say the file itself is absent or unusable; any other OSError (EIO, ETIMEDOUT, ESTALE on a
# network mount, ...) may pass, so the ingest lets it propagate: the flow's task retries it, and a file still
# unreadable after the retries is quarantined for tonight without being registered (read again next run).
PERMANENT_IO_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def is_transient(error: BaseException) -> bool:
    return isinstance(error, OSError) and not isinstance(error, PERMANENT_IO_ERRORS)


# The machine's faults, never the file's: no room to write (or spill), no memory, a storage error DuckDB reports.
NO_ROOM_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


class IngestAborted(RuntimeError):
    """The machine, not the file, failed while a file was ingested (disk full, out of memory, a storage error):
    the file's transaction is rolled back and the file is NOT registered, so the next run reads it again. Only
    a file's content quarantines the file. Not an OSError: the task's I/O retries do not apply."""


class LandingNotWritable(IngestAborted):
    """The landing folder cannot be written (read-only): the file is neither registered nor quarantined; the
    command exits 2 naming the folder (tasks/ingest/landing.py)."""


def wrapped(error: BaseException) -> BaseException | None:
    """The error `error` was raised from (or during), unless it said `from None` (e.g. a file's own fault found
    after DuckDB ran out of memory reading it: the fault is the file's, not the machine's)."""
    if error.__cause__ is not None:
        return error.__cause__
    return None if error.__suppress_context__ else error.__context__


def machine_failure(error: BaseException) -> str | None:
    """What failed, when `error` (or an error it wraps) is the machine's fault rather than the file's content
    (see NO_ROOM_ERRNOS, MemoryError, DuckDB's out-of-memory and I/O errors); None otherwise."""
    import duckdb


    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = " ".join(str(current).split())[:300]
        if isinstance(current, IngestAborted):
            return str(current)
        # DuckDB says a full disk in the text of whichever error it raises (a failed commit: TransactionException)
        if (isinstance(current, OSError) and current.errno in NO_ROOM_ERRNOS) or disk_full_file(current) is not None:
            return f"no space left on device ({text})"
        if isinstance(current, MemoryError | duckdb.OutOfMemoryException) or "Out of Memory Error" in text:
            return f"out of memory ({type(current).__name__}: {text})"
        if isinstance(current, duckdb.IOException):
            return f"storage error ({type(current).__name__}: {text})"
        current = wrapped(current)
    return None


def find_aborted(error: BaseException) -> IngestAborted | None:
    """The IngestAborted `error` is or wraps (e.g. closing the warehouse on a full disk failed after it)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, IngestAborted):
            return current
        seen.add(id(current))
        current = wrapped(current)
    return None


def aborted(path: Path | str, failure: str) -> IngestAborted:
    name = Path(path)
    return IngestAborted(f"{name.name}: ingest stopped by the machine, not the file: {failure}; the file is not "
                         f"registered and the next run reads it again ({name})")


FILE_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
              stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def irregular_file(path: Path | str) -> str | None:
    """Why `path` is not a regular file (a FIFO or a device would be read forever), else None; a path that cannot
    be looked at is left to the reader, which says why."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    kind = FILE_KINDS.get(stat.S_IFMT(mode), "not a regular file")
    return f"{Path(path).name}: {kind}, not a regular file: only regular files are read ({path})"


def content_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class FileOutcome:
    """What happened to one file; the flow's summary is a list of these."""

    dataset: str
    source_file: str
    content_sha256: str
    status: str  # loaded | quarantined | already_ingested
    provider: str | None = None
    format: str | None = None
    rows_read: int = 0
    rows_skipped: int = 0
    rows_loaded: int = 0
    rows_quarantined: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    quarantined_by_reason: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    landed_path: str | None = None  # where its bytes landed (tasks/ingest/landing.py), relative to the landing folder
    landed_again: str | None = None  # already ingested, its landed file was missing or damaged: what was wrong


def already_ingested(con: duckdb.DuckDBPyConnection, dataset: str, sha256: str) -> bool:
    # fetchall, not fetchone: DuckDB 2.0 keeps a half-read result open, and the next con.sql/register fails.
    return len(execute(con, "common/file_seen", {"dataset": dataset, "sha": sha256}).fetchall()) > 0


def record_file(
    con: duckdb.DuckDBPyConnection, outcome: FileOutcome, size_bytes: int, ingested_at: datetime
) -> None:
    execute(
        con,
        "common/insert_ingested_file",
        {
            "dataset": outcome.dataset,
            "sha": outcome.content_sha256,
            "source_file": outcome.source_file,
            "provider": outcome.provider,
            "format": outcome.format,
            "size_bytes": size_bytes,
            "rows_read": outcome.rows_read,
            "rows_skipped": outcome.rows_skipped,
            "rows_loaded": outcome.rows_loaded,
            "rows_quarantined": outcome.rows_quarantined,
            "status": outcome.status,
            "skipped_by_reason": json.dumps(outcome.skipped_by_reason),
            "ingested_at": ingested_at,
            "landed_path": outcome.landed_path,
        },
    )
