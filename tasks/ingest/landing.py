"""The landing zone: every ingested unit's bytes, kept once, beside the warehouse that registers them.

A unit (a price list, a telemetry file, a download `gpucost fetch` hands to the ingest) lands as
`landing/<sha[:2]>/<sha><suffix>.zst`: content-addressed by the SHA-256 of its original bytes, compressed with
zstd (a Parquet file, already compressed inside, lands as it is: `<sha>.parquet`), written to a part file,
fsynced and renamed into place, so a landed name always holds whole bytes. `raw.ingested_files.landed_path`
(relative to the landing folder) registers it in the unit's own transaction; core rows carry
`(content_sha256, source_line)` back to it, and DuckDB reads a landed file directly
(`read_csv('….csv.zst', compression = 'zstd')`, docs/data-contracts.md).

The folder is `landing/` beside the warehouse file (`$GPUCOST_HOME/landing/` by default): the landed files
belong to the registry that names them. The folder is ours only when it carries our marker (tasks/landing_zone.py:
a folder gpucost did not make is refused, exit 5, never emptied), and only the names the landing zone gives are
ever removed. A unit is landed before its transaction commits; a crash between the two leaves a landed file no
registry row names, which `recover` removes (with any part file) before the next ingest. `prune` (retention)
removes landed files no current row refers to, never one that a row does.

A landed file proves itself: its name claims the SHA-256 of the bytes it holds (decompressed), and every read
checks it (`landed_problem`; `landed_lines` refuses a file that fails, `LandedFileError`). The ingest flows
check every registered landed file first (`check_landed`) and say which is missing or damaged; the next ingest
of its source, whose bytes hash to the unit, lands it again (tasks/ingest/lifecycle.py). A unit with no file of
its own (an MLflow run's record, a migrated warehouse's records) is named by the unit's fingerprint, not by its
bytes' hash: its landed file is checked to be there and to name its unit.

Writing the landing folder can fail by the machine's fault (read-only, full): `landing_write_failed` makes that
an IngestAborted (LandingNotWritable when read-only), so the file is neither registered nor quarantined.
"""

from __future__ import annotations

import contextlib
import errno
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

from tasks import progress
from tasks.ingest.registry import IngestAborted, LandingNotWritable
from tasks.landing_zone import (
    MARKER,
    MIGRATED_SUFFIX,
    PART_PREFIX,
    check_owned,
    claim,
    fsync,
    is_landed_name,
    is_part_name,
    landed_name,
    landing_dir,
    landing_folder,
    registered_landed_paths,
    writable_problem,
)
from tasks.warehouse import connect, execute, query, transaction

# Bytes read per step while landing (bounded memory whatever the file size).
CHUNK_BYTES = 8 << 20
# Errors that say the landing folder cannot be written: the machine's fault, never the file's.
UNWRITABLE_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM)
# The source name of a unit with no file of its own (tasks/telemetry/mlflow_source.py SOURCE_PREFIX)
RECORD_UNIT_PREFIX = "mlflow:"


class LandedFileError(RuntimeError):
    """A landed file is missing, or does not hold the bytes its name claims: one line naming it and its source."""


def landing_write_failed(folder: Path, error: OSError) -> IngestAborted:
    """The machine's error writing the landing folder: LandingNotWritable (read-only) or IngestAborted (no room,
    and the rest); either way the file is neither registered nor quarantined and the next run reads it again."""
    cause = " ".join(str(error).split())[:300] or type(error).__name__
    if isinstance(error, PermissionError) or error.errno in UNWRITABLE_ERRNOS or "Read-only file system" in cause:
        return LandingNotWritable(f"the landing folder {folder} cannot be written ({cause}): make it writable and "
                                  "run the command again; the file is neither registered nor quarantined, the next "
                                  "run reads it again")
    return IngestAborted(f"the landing folder {folder} cannot be written ({cause}): ingest stopped by the machine, "
                         "not the file; the file is not registered and the next run reads it again")


def check_landing_before_ingest(warehouse_file: Path) -> None:
    """Before a command that ingests starts (its pre-flight): the landing folder beside `warehouse_file` is ours
    (ForeignTargetError, exit 5) and writable (LandingNotWritable, exit 2). Looks only."""
    folder = landing_folder(warehouse_file)
    registered: set[str] = set()
    if folder.is_dir() and not (folder / MARKER).is_file() and Path(warehouse_file).exists():
        # a warehouse from before the landing zone has no landed_path column yet: it names no landed file
        with contextlib.closing(connect(Path(warehouse_file), read_only=True)) as con, \
                contextlib.suppress(duckdb.Error):
            registered = registered_landed_paths(con)
    check_owned(folder, registered)
    problem = writable_problem(folder)
    if problem is not None:
        raise LandingNotWritable(problem)


def owned_landing(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The connection's landing folder, ours (marked now when it was not yet: see tasks/landing_zone.py), or None
    for an in-memory warehouse (nothing lands). Raises ForeignTargetError for a folder gpucost did not make."""
    folder = landing_dir(con)
    if folder is not None and not (folder / MARKER).is_file():
        try:
            claim(folder, registered_landed_paths(con))
        except OSError as error:
            raise landing_write_failed(folder, error) from error
    return folder


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


class _SourceFailed(Exception):
    """The file being landed could not be read (its own error, raised as it is): not the landing folder's."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def read_into_part(path: Path, folder: Path) -> Part:
    """Read `path` once: hash its bytes and write them to a part file under `folder` (one read for both).
    Raises the file's own OSError (the caller's transient-I/O rule applies), or IngestAborted when the landing
    folder cannot be written; leaves no part file behind when it does."""
    suffix = Path(path).suffix
    compressed = landed_name("0" * 64, suffix).endswith(".zst")
    part = folder / f"{PART_PREFIX}{uuid.uuid4().hex}"
    digest = hashlib.sha256()
    with open(path, "rb") as source:  # the file's own errors, as they are
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if compressed:
                with pa.CompressedOutputStream(pa.OSFile(str(part), "wb"), "zstd") as sink:  # Arrow's level 1
                    size = _copy(source, sink, digest)
            else:
                with open(part, "wb") as sink:
                    size = _copy(source, sink, digest)
        except _SourceFailed as failed:
            part.unlink(missing_ok=True)
            raise failed.error from None
        except OSError as error:
            part.unlink(missing_ok=True)
            raise landing_write_failed(folder, error) from error
        except BaseException:
            part.unlink(missing_ok=True)
            raise
    return Part(part, digest.hexdigest(), size, suffix)


def land_part(part: Part, folder: Path, replace: bool = False) -> Landed:
    """Move a part file to its landed name, fsynced. An already landed unit is not written again, unless
    `replace`: its landed file is missing or damaged, and these are the unit's original bytes."""
    relative = landed_name(part.sha256, part.suffix)
    target = folder / relative
    try:
        if replace or not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            fsync(part.path)
            os.replace(part.path, target)
            fsync(target.parent)
    except OSError as error:
        raise landing_write_failed(folder, error) from error
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


def read_part_of(path: Path, folder: Path, sha256: str) -> Part | None:
    """`path` read into a part file when its bytes still hash to `sha256` (the original bytes of a unit whose
    landed file must be landed again), else None (the part discarded)."""
    part = read_into_part(path, folder)
    if part.sha256 != sha256:
        discard(part)
        return None
    return part


def land_bytes(data: bytes, folder: Path, sha256: str, suffix: str) -> Landed:
    """Land bytes a reader produced for a unit with no file of its own (e.g. an MLflow run's record, a
    migrated warehouse's records), addressed by the unit's hash."""
    relative = landed_name(sha256, suffix)
    target = folder / relative
    if not target.exists():
        part = target.parent / f"{PART_PREFIX}{uuid.uuid4().hex}"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with pa.CompressedOutputStream(pa.OSFile(str(part), "wb"), "zstd") as sink:
                sink.write(data)
            fsync(part)
            os.replace(part, target)
            fsync(target.parent)
        except OSError as error:
            raise landing_write_failed(folder, error) from error
        finally:
            part.unlink(missing_ok=True)
    return Landed(sha256, len(data), relative)


class _Writable(Protocol):
    def write(self, data: bytes, /) -> object: ...


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


def _copy(source: BinaryIO, sink: _Writable, digest: _Digest) -> int:
    """Bytes copied; a failed read raises _SourceFailed (the file's error), a failed write its own OSError."""
    size = 0
    while True:
        try:
            chunk = source.read(CHUNK_BYTES)
        except OSError as error:
            raise _SourceFailed(error) from error
        if not chunk:
            return size
        digest.update(chunk)
        sink.write(chunk)
        size += len(chunk)


def landed_files(folder: Path) -> Iterable[Path]:
    """Every file one level down in the landing folder (landed units, part files, and whatever else is there)."""
    return (p for p in folder.glob("*/*") if p.is_file() and not p.is_symlink()) if folder.exists() else ()


def recover(con: duckdb.DuckDBPyConnection, folder: Path | None = None) -> list[Path]:
    """Remove what a crash left: part files, and landed files no registry row names (landed before a
    transaction that never committed); only names the landing zone gives, never anything else found there.
    Returns what was removed. Run by the writer before it ingests; claims the folder first (ForeignTargetError,
    exit 5, for a `landing/` gpucost did not make: nothing removed)."""
    folder = folder if folder is not None else owned_landing(con)
    if folder is None or not folder.exists():
        return []
    registered = registered_landed_paths(con)
    removed = []
    for path in folder.glob(f"{PART_PREFIX}*"):  # a file read before its hash was known, a migration's export
        if not is_part_name(path.name) or path.is_symlink():
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    for path in landed_files(folder):
        relative = path.relative_to(folder).as_posix()
        if is_part_name(path.name) or (is_landed_name(relative) and relative not in registered):
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


def landed_content_sha256(path: Path) -> str:
    """SHA-256 of the bytes a landed file holds: decompressed (`.zst`), or as it is (stored as is)."""
    digest = hashlib.sha256()
    if path.name.endswith(".zst"):
        with pa.CompressedInputStream(pa.OSFile(str(path)), "zstd") as stream:
            while chunk := stream.read(CHUNK_BYTES):
                digest.update(chunk)
    else:
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK_BYTES):
                digest.update(chunk)
    return digest.hexdigest()


def holds_its_named_bytes(landed_path: str, source_file: str) -> bool:
    """The landed file's name is the SHA-256 of its bytes: a file's, not a record unit's (an MLflow run's, a
    migrated warehouse's records), whose name is the unit's fingerprint."""
    return not landed_path.endswith(f"{MIGRATED_SUFFIX}.zst") and not source_file.startswith(RECORD_UNIT_PREFIX)


def landed_problem(folder: Path, landed_path: str, sha256: str, source_file: str) -> str | None:
    """What is wrong with the landed file of the unit `sha256` (None: it is there and holds the bytes its name
    claims): missing, named for another unit, unreadable or damaged (truncated, bytes changed, another file's)."""
    path = folder / landed_path
    if not path.is_file():
        return "missing"
    if not is_landed_name(landed_path) or not Path(landed_path).name.startswith(sha256):
        return f"not named for its unit {sha256[:12]}…"
    if not holds_its_named_bytes(landed_path, source_file):
        return None
    try:
        found = landed_content_sha256(path)
    except (OSError, pa.ArrowException) as error:
        return f"damaged (unreadable: {' '.join(str(error).split())[:120]})"
    if found != sha256:
        return f"damaged (its bytes hash to {found[:12]}…, not the {sha256[:12]}… its name claims)"
    return None


@dataclass(frozen=True)
class LandedProblem:
    """A registered landed file that is missing or damaged, with the unit and a source it came from."""

    landed_path: str
    sha256: str
    source_file: str
    problem: str

    def message(self, folder: Path) -> str:
        again = ("the next ingest of it lands it again from its original bytes"
                 if holds_its_named_bytes(self.landed_path, self.source_file)
                 else "its records cannot be landed again (no original file): restore it from a backup")
        return (f"landed file {folder / self.landed_path} ({self.source_file}) is {self.problem}: its original lines "
                f"cannot be read until {again}")


def check_landed(con: duckdb.DuckDBPyConnection, dataset: str, folder: Path | None = None) -> list[LandedProblem]:
    """Every landed file the dataset's registry rows name, checked against the hash its name claims (see
    `landed_problem`)."""
    folder = folder if folder is not None else landing_dir(con)
    if folder is None:
        return []
    problems = []
    for landed_path, sha, source_file in query(con, "ingest/landed_units", {"dataset": dataset}).fetchall():
        problem = landed_problem(folder, landed_path, sha, source_file)
        if problem is not None:
            problems.append(LandedProblem(landed_path, sha, source_file, problem))
    return problems


def say_landed_problems(con: duckdb.DuckDBPyConnection, dataset: str, label: str) -> list[str]:
    """`check_landed`, each problem said as a progress line (`<label>: warning: landed file <sha>… damaged:
    <source's name>`, the name last, as progress lines end with the file); returns the problems' whole messages
    (the flow's report)."""
    folder = landing_dir(con)
    if folder is None:
        return []
    problems = check_landed(con, dataset, folder)
    for problem in problems:
        kind = problem.problem.split(" (", 1)[0]
        progress.step("%s: warning: landed file %s… %s: %s", label, problem.sha256[:12], kind,
                      Path(problem.source_file).name)
    return [problem.message(folder) for problem in problems]


def landing_report(problems: list[str]) -> str:
    """The landing zone's problems found before an ingest, as the head of its Markdown report ('' for none)."""
    return "".join(f"- warning: {line}\n" for line in problems) + ("\n" if problems else "")


def land_again_if_damaged(
    con: duckdb.DuckDBPyConnection, folder: Path, sha256: str, original: Path, part: Part | None
) -> tuple[str, str] | None:
    """The unit `sha256` is ingested already; when its landed file is missing or damaged and `original` (or its
    `part`, read already) still holds the unit's bytes, land it again from them. Returns (landed path, what was
    wrong) when it did; None when nothing was to be done (or nothing could be: no original bytes at hand)."""
    found = query(con, "ingest/landed_unit_of", {"sha": sha256}).fetchall()
    if not found:  # never landed (an in-memory warehouse's unit), or removed by retention: nothing to restore
        return None
    landed_path, source_file = found[0]
    problem = landed_problem(folder, landed_path, sha256, source_file)
    if problem is None or not holds_its_named_bytes(landed_path, source_file):
        return None
    if part is None:
        try:
            part = read_part_of(original, folder, sha256)
        except OSError:  # the original cannot be read now: the problem stays said, the next ingest tries again
            return None
        if part is None:
            return None
    landed = land_part(part, folder, replace=True)
    if landed.landed_path != landed_path:  # the original's suffix differs from the first source's
        with transaction(con):
            execute(con, "ingest/repoint_landed_path",
                    {"landed_path": landed.landed_path, "sha": sha256, "previous": landed_path})
    return landed.landed_path, problem


def landed_lines(con: duckdb.DuckDBPyConnection, sha256: str) -> dict[int, str | None]:
    """line -> text of the landed line-oriented file of the unit `sha256` (sql/ingest/landed_lines.sql, the
    query docs/data-contracts.md shows); {} when nothing of it landed. The file is checked first: a missing or
    damaged one raises LandedFileError (never another file's lines)."""
    folder = landing_dir(con)
    found = query(con, "ingest/landed_unit_of", {"sha": sha256}).fetchall()
    if folder is None or not found:
        return {}
    landed_path, source_file = found[0]
    problem = landed_problem(folder, landed_path, sha256, source_file)
    if problem is not None:
        raise LandedFileError(LandedProblem(landed_path, sha256, source_file, problem).message(folder))
    return dict(query(con, "ingest/landed_lines", {"landed_file": str(folder / landed_path)}).fetchall())
