"""The registry of ingested files, keyed by content hash: the same bytes are never ingested twice."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb

from tasks.warehouse import execute

# I/O errors that say the file itself is absent or unusable; any other OSError (EIO, ETIMEDOUT, ESTALE on a
# network mount, ...) may pass, so the ingest lets it propagate: the flow's task retries it, and a file still
# unreadable after the retries is quarantined for tonight without being registered (read again next run).
PERMANENT_IO_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def is_transient(error: BaseException) -> bool:
    return isinstance(error, OSError) and not isinstance(error, PERMANENT_IO_ERRORS)


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
        },
    )
