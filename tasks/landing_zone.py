"""Where the landing zone keeps a unit's bytes (`landing/<sha[:2]>/<sha><suffix>.zst` beside the warehouse
file), and the one-time migration of a warehouse made before it (its JSON record tables written out as landed
files). Below the warehouse, which runs the migration on connect; tasks/ingest/landing.py lands and prunes.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import duckdb

from tasks.sql_files import execute, query, transaction

FOLDER = "landing"
PART_PREFIX = ".part-"
# Files whose format is compressed inside: landed as they are (DuckDB reads them in place).
STORED_AS_IS = (".parquet",)


def landing_dir(con: duckdb.DuckDBPyConnection) -> Path | None:
    """`landing/` beside the connection's database file; None for an in-memory database (nothing lands)."""
    rows = query(con, "ingest/database_file").fetchall()
    path = rows[0][0] if rows else None
    return Path(path).resolve().parent / FOLDER if path else None


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
