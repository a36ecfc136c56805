"""What a damaged store or a full disk looks like, said in one line: the pre-flight checks (gpucost/preflight.py)
ask before a command starts, the ingest and publish steps when a write fails or a registry is read."""

from __future__ import annotations

import errno
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

SQLITE_MAGIC = b"SQLite format 3\x00"


class ForeignTargetError(RuntimeError):
    """A target gpucost would write into exists and is not something gpucost made (a publish target, a `landing/`
    folder): nothing is written, the command exits 5 naming it."""


@dataclass(frozen=True)
class Problem:
    store: str          # warehouse | published | mlflow | disk
    path: str
    message: str        # one line: what is wrong with which file, and what to do
    kind: str           # damaged | disk_full (the command line's exit code: gpucost/commands.py)


def short_cause(error: BaseException) -> str:
    return " ".join(str(error).split())[:200] or type(error).__name__


def sqlite_path(tracking_uri: str) -> Path | None:
    return Path(tracking_uri.removeprefix("sqlite:///")) if tracking_uri.startswith("sqlite:///") else None


def mlflow_problem(tracking_uri: str) -> Problem | None:
    """A local SQLite MLflow store that is not SQLite or fails quick_check. A store that is only locked, a
    remote server, or no store yet are not pre-flight problems (training reports those itself)."""
    path = sqlite_path(tracking_uri)
    if path is None or not path.exists():
        return None
    with open(path, "rb") as fh:
        header = fh.read(16)
    cause = None
    if header != SQLITE_MAGIC:
        cause = "is empty (0 bytes)" if not header else "is not an SQLite database (its header is overwritten)"
    else:
        try:
            con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=1)
            try:
                result = con.execute("pragma quick_check").fetchall()
            finally:
                con.close()
            if result != [("ok",)]:
                cause = "; ".join(str(r[0]) for r in result[:3])
        except sqlite3.OperationalError as error:
            if "locked" in str(error):
                return None
            cause = short_cause(error)
        except sqlite3.DatabaseError as error:
            cause = short_cause(error)
    if cause is None:
        return None
    return Problem("mlflow", str(path),
                   f"the MLflow store {path} is damaged ({cause}); training is skipped and the ranking uses no model "
                   "until you restore it from a backup, or move it aside (the next `gpucost train` starts a new "
                   "registry)", "damaged")


def disk_full_file(error: BaseException) -> str | None:
    """When `error` (or what it wraps) is "no space left on device" (or a file-size limit), the file being
    written if the error names one, else ''. None for any other error."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current)
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            return str(current.filename or "")
        if "No space left on device" in text or "File too large" in text or "Disk quota exceeded" in text:
            named = re.search(r'"([^"]+)"', text) or re.search(r"'(/[^']+)'", text)
            return named.group(1) if named else ""
        if "database or disk is full" in text:  # SQLite's way (e.g. the MLflow store), naming no file
            return ""
        current = current.__cause__ or current.__context__
    return None
