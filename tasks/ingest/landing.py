"""The landing zone: every ingested unit's bytes, kept once, beside the warehouse that registers them.

A unit (a price list, a telemetry file, a download `gpucost fetch` hands to the ingest) lands as
`landing/<sha[:2]>/<sha><suffix>.zst`: content-addressed by the SHA-256 of its original bytes, compressed with
zstd (a Parquet file, already compressed inside, lands as it is: `<sha>.parquet`), written to a part file,
fsynced and renamed into place, so a landed name always holds whole bytes. `raw.ingested_files.landed_path`
(relative to the landing folder) registers it in the unit's own transaction; core rows carry
`(content_sha256, source_line)` back to it, and DuckDB reads a landed file directly
(`read_csv('….csv.zst', compression = 'zstd')`, docs/data-contracts.md).

The folder is `landing/` beside the warehouse file (`$GPUCOST_HOME/landing/` by default): the landed files
belong to the registry that names them. A unit is landed before its transaction commits; a crash between the
two leaves a landed file no registry row names, which `recover` removes (with any part file) before the next
ingest. `prune` (retention) removes landed files no current row refers to, never one that a row does.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import BinaryIO, Protocol

import duckdb
import pyarrow as pa

from tasks.landing_zone import PART_PREFIX, fsync, landed_name, landing_dir
from tasks.warehouse import execute, query, transaction

# Bytes read per step while landing (bounded memory whatever the file size).
CHUNK_BYTES = 8 << 20


@dataclass(frozen=True)
class Landed:
    """A landed unit: the SHA-256 of its original bytes, their size, and where it landed (relative to the
    landing folder)."""

    sha256: str
    size_bytes: int
    landed_path: str


@dataclass(frozen=True)
class Part:
    """A file read once: the SHA-256 and size of its bytes, written (compressed unless stored as is) to a part
    file under the landing folder, not landed yet."""

    path: Path
    sha256: str
    size_bytes: int
    suffix: str  # the file's own suffix (says whether it lands compressed)


def read_into_part(path: Path, folder: Path) -> Part:
    """Read `path` once: hash its bytes and write them to a part file under `folder` (one read for both).
    Raises OSError (the caller's transient-I/O rule applies); leaves no part file behind when it does."""
    suffix = Path(path).suffix
    compressed = landed_name("0" * 64, suffix).endswith(".zst")
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f"{PART_PREFIX}{uuid.uuid4().hex}"
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as source:
            if compressed:
                with pa.CompressedOutputStream(pa.OSFile(str(part), "wb"), "zstd") as sink:  # Arrow's level 1
                    size = _copy(source, sink, digest)
            else:
                with open(part, "wb") as sink:
                    size = _copy(source, sink, digest)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return Part(part, digest.hexdigest(), size, suffix)


def land_part(part: Part, folder: Path) -> Landed:
    """Move a part file to its landed name, fsynced (an already landed unit is not written again)."""
    relative = landed_name(part.sha256, part.suffix)
    target = folder / relative
    try:
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            fsync(part.path)
            os.replace(part.path, target)
            fsync(target.parent)
    finally:
        part.path.unlink(missing_ok=True)
    return Landed(part.sha256, part.size_bytes, relative)


def discard(part: Part | None) -> None:
    """A part file that will not land (its bytes were ingested before)."""
    if part is not None:
        part.path.unlink(missing_ok=True)


def land_file(path: Path, folder: Path, sha256: str) -> Landed:
    """Land `path` (whose bytes hashed to `sha256` where it was staged) under `folder`, atomically. Raises
    OSError (the caller's transient-I/O rule applies) or ValueError when the bytes read are not the ones hashed
    (the file changed while it was ingested)."""
    part = read_into_part(path, folder)
    if part.sha256 != sha256:
        discard(part)
        raise ValueError(f"{Path(path).name} changed while it was ingested (its bytes no longer hash to "
                         f"{sha256[:12]}…)")
    return land_part(part, folder)


def land_bytes(data: bytes, folder: Path, sha256: str, suffix: str) -> Landed:
    """Land bytes a reader produced for a unit with no file of its own (e.g. an MLflow run's record, a
    migrated warehouse's records), addressed by the unit's hash."""
    relative = landed_name(sha256, suffix)
    target = folder / relative
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.parent / f"{PART_PREFIX}{uuid.uuid4().hex}"
        try:
            with pa.CompressedOutputStream(pa.OSFile(str(part), "wb"), "zstd") as sink:
                sink.write(data)
            fsync(part)
            os.replace(part, target)
            fsync(target.parent)
        finally:
            part.unlink(missing_ok=True)
    return Landed(sha256, len(data), relative)


class _Writable(Protocol):
    def write(self, data: bytes, /) -> object: ...


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


def _copy(source: BinaryIO, sink: _Writable, digest: _Digest) -> int:
    size = 0
    while chunk := source.read(CHUNK_BYTES):
        digest.update(chunk)
        sink.write(chunk)
        size += len(chunk)
    return size


def landed_files(folder: Path) -> Iterable[Path]:
    """Every file under the landing folder (landed units and part files)."""
    return (p for p in folder.glob("*/*") if p.is_file()) if folder.exists() else ()


def recover(con: duckdb.DuckDBPyConnection, folder: Path | None = None) -> list[Path]:
    """Remove what a crash left: part files, and landed files no registry row names (landed before a
    transaction that never committed). Returns what was removed. Run by the writer before it ingests."""
    folder = folder if folder is not None else landing_dir(con)
    if folder is None or not folder.exists():
        return []
    registered = {path for (path,) in query(con, "ingest/landed_paths").fetchall()}
    removed = []
    for path in folder.glob(f"{PART_PREFIX}*"):  # a file read before its hash was known, a migration's export
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    for path in landed_files(folder):
        relative = path.relative_to(folder).as_posix()
        if path.name.startswith(PART_PREFIX) or relative not in registered:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def prune(con: duckdb.DuckDBPyConnection, before: datetime, folder: Path | None = None) -> list[str]:
    """Retention: remove the landed files ingested before `before` that no current row refers to (no row of core
    or quarantine carries their hash), never one a row does. Their registry rows stay (the same bytes are
    still not ingested again), with `landed_path` cleared in one transaction before the files are removed (a
    crash between the two leaves files no row names: `recover` removes them). Returns the removed paths."""
    folder = folder if folder is not None else landing_dir(con)
    if folder is None:
        return []
    with transaction(con):
        unreferenced = [path for (path,) in query(con, "ingest/unreferenced_landed_files",
                                                   {"before": before}).fetchall()]
        execute(con, "ingest/clear_landed_paths", {"paths": unreferenced})
    for relative in unreferenced:
        (folder / relative).unlink(missing_ok=True)
    return unreferenced


def apply_retention(con: duckdb.DuckDBPyConnection, retention_days: int | None, now: datetime) -> list[str]:
    """`prune` the landed files ingested more than `retention_days` before `now` ([ingest] landing_retention_days
    of config/settings.toml); None keeps every landed file."""
    if retention_days is None:
        return []
    return prune(con, now - timedelta(days=retention_days))


def landed_lines(con: duckdb.DuckDBPyConnection, sha256: str) -> dict[int, str | None]:
    """line -> text of the landed line-oriented file of the unit `sha256` (sql/ingest/landed_lines.sql, the
    query docs/data-contracts.md shows); {} when nothing of it landed."""
    folder = landing_dir(con)
    found = query(con, "ingest/landed_file_of", {"sha": sha256}).fetchall()
    if folder is None or not found:
        return {}
    return dict(query(con, "ingest/landed_lines", {"landed_file": str(folder / found[0][0])}).fetchall())
