"""Where the landing zone keeps a unit's bytes (`landing/<sha[:2]>/<sha><suffix>.zst` beside the warehouse
file), whose it is, and the one-time migration of a warehouse made before it (its JSON record tables written out
as landed files). Below the warehouse, which runs the migration on connect; tasks/ingest/landing.py lands, checks
and prunes.

The landing zone owns only what it made. `landing/` holds our marker file (`.gpucost-landing`); a folder without
it is claimed (the marker written) only when it is empty, or when every file in it is one the warehouse's registry
names (a landing zone from before the marker), else refused (`ForeignTargetError`, exit 5), before anything is
written or removed. Inside our folder only names the landing zone gives (`<sha[:2]>/<sha><suffix>`,
`.part-<32 hex>`) are ever written or removed: anything else a user put there is left alone.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

import duckdb

from tasks.sql_files import execute, query, transaction
from tasks.stores import ForeignTargetError

FOLDER = "landing"
PART_PREFIX = ".part-"
MARKER = ".gpucost-landing"
MARKER_TEXT = ("gpucost landing zone: every ingested unit's bytes, named by their SHA-256 and registered in "
               "raw.ingested_files.landed_path of the warehouse beside this folder (tasks/ingest/landing.py). "
               "gpucost writes and removes only the names it gives here.\n")
# Files whose format is compressed inside: landed as they are (DuckDB reads them in place).
STORED_AS_IS = (".parquet",)
# The names the landing zone gives (relative to the folder): a landed unit, a part file (at the top: a file read
# before its hash was known, or a migration's export folder; beside a landed unit: bytes being landed).
LANDED_NAME = re.compile(r"(?P<prefix>[0-9a-f]{2})/(?P=prefix)[0-9a-f]{62}[a-z0-9.]{0,20}")
PART_NAME = re.compile(r"\.part-[0-9a-f]{32}")
def is_landed_name(relative: str) -> bool:
    return LANDED_NAME.fullmatch(relative) is not None


def is_part_name(name: str) -> bool:
    return PART_NAME.fullmatch(name) is not None


def landing_folder(warehouse_file: Path) -> Path:
    """`landing/` beside the warehouse file."""
    return Path(warehouse_file).resolve().parent / FOLDER


def landing_dir(con: duckdb.DuckDBPyConnection) -> Path | None:
    """`landing/` beside the connection's database file; None for an in-memory database (nothing lands)."""
    rows = query(con, "ingest/database_file").fetchall()
    path = rows[0][0] if rows else None
    return landing_folder(Path(path)) if path else None


def registered_landed_paths(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {path for (path,) in query(con, "ingest/landed_paths").fetchall()}


def foreign_files(folder: Path, registered: set[str]) -> list[str]:
    """Files under an unmarked `folder` that the landing zone did not make (relative paths, sorted). Ours: a file
    the registry names and, when the registry names a file there (a landing zone from before the marker, with what
    a crash left in it), a part file or a landed name no row names yet. Empty folders count for nothing."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_symlink() or not p.is_dir())
    named_here = any(relative in registered for relative in files)

    def ours(relative: str) -> bool:
        top, _, rest = relative.partition("/")
        left_by_a_crash = (is_part_name(top) or is_landed_name(relative)
                           or (re.fullmatch("[0-9a-f]{2}", top) is not None and is_part_name(rest)))
        return relative in registered or (named_here and left_by_a_crash)

    return [relative for relative in files if not ours(relative)]


def ownership_problem(folder: Path, registered: set[str]) -> str | None:
    """Why `folder` is not a landing zone gpucost may write into (None: absent, marked, empty, or holding only
    files the registry names). Looks only; `claim` writes the marker."""
    if not folder.exists() and not folder.is_symlink():
        return None
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if (folder / MARKER).is_file():
        return None
    foreign = foreign_files(folder, registered)
    if not foreign:
        return None
    more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
    return (f"{folder} holds files the warehouse did not land ({foreign[0]}{more}) and no {MARKER}: it is not a "
            "landing zone gpucost made")


def foreign_landing_message(problem: str) -> str:
    return (f"{problem}, so gpucost will not write into it or remove anything from it: move it aside (or point "
            "GPUCOST_WAREHOUSE at another folder); nothing was written")


def check_owned(folder: Path, registered: set[str]) -> None:
    """Raise ForeignTargetError (exit 5) when `folder` is not ours (see `ownership_problem`)."""
    problem = ownership_problem(folder, registered)
    if problem is not None:
        raise ForeignTargetError(foreign_landing_message(problem))


def claim(folder: Path, registered: set[str]) -> None:
    """Make `folder` our landing zone, or refuse it: created with the marker when absent; an unmarked folder
    claimed only when it holds nothing but files the registry names (a landing zone from before the marker)."""
    if (folder / MARKER).is_file():
        return
    check_owned(folder, registered)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text(MARKER_TEXT, encoding="utf-8")


def writable_problem(folder: Path) -> str | None:
    """The landing folder (or, not made yet, the folder it goes in) cannot be written: one line."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or os.access(existing, os.W_OK | os.X_OK):
        return None
    where = "" if existing == folder else f" ({existing}, where it goes, is read-only)"
    return (f"the landing folder {folder} is read-only{where}: gpucost keeps every ingested file there; make it "
            "writable and run the command again; nothing was ingested")


def landed_name(sha256: str, suffix: str) -> str:
    """Where a unit with this hash lands, relative to the landing folder."""
    suffix = "".join(c for c in suffix.lower() if c.isalnum() or c == ".")[:16]
    name = f"{sha256}{suffix}" if suffix in STORED_AS_IS else f"{sha256}{suffix}.zst"
    return f"{sha256[:2]}/{name}"


def fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# What a warehouse made before the landing zone kept of every record, and the file each unit's records land in.
RECORD_TABLES = {
    "price_records": ("prices", "migrations/export_price_records"),
    "telemetry_records": ("telemetry", "migrations/export_telemetry_records"),
}
MIGRATED_SUFFIX = ".records.jsonl"


def land_raw_record_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Migrate a warehouse made before the landing zone, once, in one transaction: the records of each unit in
    raw.price_records / raw.telemetry_records are written to the landing zone as one JSON Lines file per unit
    (`<sha>.records.jsonl.zst`: source_line, raw_values and, for prices, provider and format, in line order),
    the unit's registry rows name it, and the two tables are dropped. Core rows keep (content_sha256,
    source_line), so each still finds its record. Returns the landed paths (none when there was nothing to do).

    A crash before the commit leaves the tables as they were (the next connection migrates again) and landed
    files no registry row names (`recover` removes them)."""
    tables = [table for (table,) in query(con, "migrations/raw_record_tables").fetchall()]
    if not tables:
        return []
    folder = landing_dir(con)
    if folder is not None:
        claim(folder, registered_landed_paths(con))
    landed: list[str] = []
    with transaction(con):
        for table in tables:
            dataset, export = RECORD_TABLES[table]
            if folder is not None:
                landed += _export_units(con, folder, dataset, export)
        execute(con, "migrations/drop_raw_record_tables")
    return landed


def _export_units(con: duckdb.DuckDBPyConnection, folder: Path, dataset: str, export: str) -> list[str]:
    """One table's records, written per unit by DuckDB, moved to their landed names; registry rows updated."""
    exported = folder / f"{PART_PREFIX}{uuid.uuid4().hex}"
    landed = []
    try:
        exported.parent.mkdir(parents=True, exist_ok=True)
        execute(con, export, {"folder": str(exported)})
        for unit in sorted(exported.glob("content_sha256=*")):
            sha = unit.name.split("=", 1)[1]
            relative = landed_name(sha, MIGRATED_SUFFIX)
            target = folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            parts = sorted(unit.glob("*.zst"))
            joined = unit / "joined.zst"
            with open(joined, "wb") as sink:  # zstd frames one after another read as one stream
                for part in parts:
                    with open(part, "rb") as source:
                        shutil.copyfileobj(source, sink)
            fsync(joined)
            os.replace(joined, target)
            fsync(target.parent)
            execute(con, "migrations/point_registry_at_landed",
                    {"landed_path": relative, "sha": sha, "dataset": dataset})
            landed.append(relative)
    finally:
        shutil.rmtree(exported, ignore_errors=True)
    return landed
