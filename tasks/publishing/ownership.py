"""Never replace what gpucost did not make. Publish replaces its targets (the published database, the chart
beside it, the Parquet folder), which environment variables can point anywhere (GPUCOST_PUBLISHED,
GPUCOST_PARQUET_DIR): each is replaced only when it is

- absent;
- the published database: a DuckDB database carrying our marker table (`gpucost_publication`, written by every
  publish; a database holding the published ranking tables, from before the marker, counts too);
- a file gpucost itself wrote there last (`written_by_us`: same size and bytes after its head, or emptied since),
  recorded in `$GPUCOST_HOME/published_files.json` after every write, so a publication damaged at its start
  (header overwritten) is still rebuilt;
- the Parquet folder: empty, or holding our marker file (`.gpucost-parquet`, or the `LATEST` pointer of a
  folder from before the marker).

Anything else is refused before anything is written (`ForeignTargetError`, exit 5, naming the file).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

# defined with the stores, where the landing zone raises it too
from tasks.stores import ForeignTargetError as ForeignTargetError
from tasks.warehouse import execute

MARKER_TABLE = "gpucost_publication"
# Tables every publication since the first has held: a database with all of them is ours (from before the marker).
LEGACY_TABLES = frozenset({"gpu_cost_ranking", "gpu_cost_ranking_history", "model_versions"})
PARQUET_MARKER = ".gpucost-parquet"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PARQUET_LEGACY_MARKER = "LATEST"
WRITTEN_RECORD = "published_files.json"


def record_path(home: Path) -> Path:
    return home / WRITTEN_RECORD


# What identifies a file gpucost wrote, whatever happened to its first bytes since: its size and the hash of the
# bytes after its first 4 KiB (in a DuckDB file: the two database headers and the first blocks). A copy (a backup
# restored) keeps both; damage to the file's start (a DuckDB main header overwritten) keeps both; another file
# written there changes them.
SKIPPED_HEAD = 4096
HASHED_BYTES = 8192


def _identity(path: Path) -> dict[str, object]:
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        fh.seek(SKIPPED_HEAD)
        body = fh.read(HASHED_BYTES)
    return {"size": size, "sha256_after_head": hashlib.sha256(body).hexdigest()}


def _read_record(home: Path) -> dict[str, dict[str, object]]:
    try:
        record = json.loads(record_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def remember_written(home: Path, path: Path) -> None:
    """Record that gpucost just wrote `path` (atomically: a record half-written is never read)."""
    record = _read_record(home)
    record[str(path.absolute())] = _identity(path)
    target = record_path(home)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, target)


def written_by_us(home: Path, path: Path) -> bool:
    """`path` is the file gpucost last wrote there: the same size and bytes after its head (possibly damaged at its
    start, or restored from a copy), or emptied since (nothing in it to lose)."""
    known = _read_record(home).get(str(path.absolute()))
    if not isinstance(known, dict) or not path.is_file():
        return False
    try:
        found = _identity(path)
    except OSError:
        return False
    return found["size"] == 0 or found == known


def carries_marker(path: Path) -> bool:
    """A DuckDB database (read-only, nothing else reachable) holding our marker table or the published tables."""
    import duckdb


    try:
        with duckdb.connect(str(path), read_only=True, config={"enable_external_access": False}) as con:
            tables = {name for (name,) in execute(con, "publish/main_tables").fetchall()}
    except (duckdb.Error, OSError):
        return False
    return MARKER_TABLE in tables or tables >= LEGACY_TABLES


def database_is_ours(home: Path, path: Path) -> bool:
    return not path.exists() or written_by_us(home, path) or (path.is_file() and carries_marker(path))


def foreign_database_message(path: Path) -> str:
    return (f"{path} exists and is not a database gpucost published (no {MARKER_TABLE} table, not the file it last "
            "wrote there), so gpucost will not replace it: move it aside or point GPUCOST_PUBLISHED at another "
            "file; nothing was written")


def check_database_target(home: Path, path: Path) -> None:
    if not database_is_ours(home, path):
        raise ForeignTargetError(foreign_database_message(path))


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(magic)) == magic
    except OSError:
        return False


def check_file_target(home: Path, path: Path, what: str, magic: bytes) -> None:
    """A plain file publish writes (e.g. the chart): absent, the one gpucost last wrote there, or (a file from
    before the record) a regular file of the kind publish writes (`magic`: its first bytes)."""
    if not path.exists() and not path.is_symlink():
        return
    legacy = path.is_file() and not path.is_symlink() and _starts_with(path, magic)
    if not written_by_us(home, path) and not legacy:
        raise ForeignTargetError(f"{path} ({what}) exists and is not a file gpucost wrote, so gpucost will not "
                                 "replace it: move it aside or point GPUCOST_PUBLISHED at another folder; "
                                 "nothing was written")


def check_parquet_target(root: Path) -> None:
    """The Parquet folder: absent, an empty folder, or one holding our marker."""
    if not root.exists() and not root.is_symlink():
        return
    why = None
    if not root.is_dir():
        why = "is not a folder"
    elif not (root / PARQUET_MARKER).is_file() and not (root / PARQUET_LEGACY_MARKER).is_file() \
            and any(root.iterdir()):
        why = f"is a folder gpucost did not make (no {PARQUET_MARKER} in it) and is not empty"
    if why:
        raise ForeignTargetError(f"the Parquet folder {root} {why}, so gpucost will not write into it: point "
                                 "GPUCOST_PARQUET_DIR (or config/ranking.toml [publish] parquet_dir) at an empty or "
                                 "new folder; nothing was written")


def mark_parquet_root(root: Path) -> None:
    (root / PARQUET_MARKER).write_text("gpucost Parquet snapshots (tasks/publishing/parquet.py)\n", encoding="utf-8")
