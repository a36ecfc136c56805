"""The published tables as Parquet, for readers on other machines and engines (Spark, Trino, pandas/polars,
DuckDB) through a shared filesystem or object store.

Each night writes a complete snapshot into a new dated directory, then points `LATEST` (a one-line pointer
file, for object stores) and `latest` (a symlink, for people) at it with atomic renames. A snapshot is never
changed once written, so a reader that resolved the pointer keeps a consistent set of tables; the newest
`snapshots_kept` snapshots are kept, older ones removed.

    <dir>/LATEST                                  -> "snapshots/2026-01-06T020000Z"
    <dir>/latest                                  -> snapshots/2026-01-06T020000Z (symlink)
    <dir>/snapshots/2026-01-06T020000Z/gpu_cost_ranking.parquet
    <dir>/snapshots/2026-01-06T020000Z/gpu_cost_ranking_history/publish_date=2026-01-06/data_0.parquet
    <dir>/snapshots/2026-01-06T020000Z/prices_current.parquet  (and every other published table)
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from tasks.publishing.database import PUBLISHED_TABLES
from tasks.publishing.ownership import check_parquet_target, mark_parquet_root
from tasks.ranking.config import Publish

POINTER = "LATEST"
LINK = "latest"
SNAPSHOTS = "snapshots"
# Tables written as Hive-style partitions (one folder per night) instead of one file.
PARTITIONED = {"gpu_cost_ranking_history": "publish_date"}


@dataclass
class ParquetSnapshot:
    root: Path                                     # the configured directory
    path: Path                                     # this night's snapshot directory
    files: dict[str, Path] = field(default_factory=dict)   # table -> file or partitioned directory
    removed: list[Path] = field(default_factory=list)      # snapshots past `snapshots_kept`


def parquet_root(publish: Publish, home: Path) -> Path:
    """config/ranking.toml [publish] parquet_dir, which GPUCOST_PARQUET_DIR overrides (tasks/settings.py), relative
    to the state folder `home`."""
    path = Path(publish.parquet_dir).expanduser()
    return path if path.is_absolute() else home / path


def snapshot_name(published_at: datetime) -> str:
    return f"{published_at:%Y-%m-%dT%H%M%SZ}"


def latest_snapshot(root: Path) -> Path | None:
    """The snapshot `LATEST` points at (what a reader should open), or None before the first night."""
    pointer = root / POINTER
    return root / pointer.read_text(encoding="utf-8").strip() if pointer.exists() else None


def _replace_atomically(root: Path, name: str, write: Any) -> None:
    tmp = root / f".{name}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    write(tmp)
    os.replace(tmp, root / name)


def export_parquet(published: Path, root: Path, published_at: datetime, snapshots_kept: int,
                   limits: dict[str, Any] | None = None) -> ParquetSnapshot:
    """Copy every table of the published database into a new snapshot under `root` and point LATEST at it. `root`
    must be absent, empty or ours (tasks/publishing/ownership.py: ForeignTargetError otherwise, nothing written)."""

    check_parquet_target(root)
    snapshots = root / SNAPSHOTS
    snapshots.mkdir(parents=True, exist_ok=True)
    mark_parquet_root(root)
    name = snapshot_name(published_at)
    if (snapshots / name).exists():  # published twice within a second: keep both, the newer one suffixed
        name = f"{name}-{os.getpid()}"
    # written under a hidden name, renamed whole: no reader ever sees half a snapshot
    staging = snapshots / f".{name}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    snapshot = ParquetSnapshot(root=root, path=snapshots / name)
    try:
        # DuckDB capped (`limits`: memory_limit, temp_directory); the files keep no row order (readers order by
        # rank or date), which lets DuckDB write them in parallel without buffering
        with duckdb.connect(str(published), read_only=True,
                            config={"preserve_insertion_order": False} | dict(limits or {})) as con:
            for table in PUBLISHED_TABLES:
                partition = PARTITIONED.get(table)
                relation = con.table(table)
                if partition:
                    write_partitions(con, table, partition, staging / table)
                    snapshot.files[table] = snapshot.path / table
                else:
                    relation.write_parquet(str(staging / f"{table}.parquet"), compression="zstd")
                    snapshot.files[table] = snapshot.path / f"{table}.parquet"
        os.rename(staging, snapshot.path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    relative = f"{SNAPSHOTS}/{name}"
    _replace_atomically(root, POINTER, lambda tmp: tmp.write_text(relative + "\n", encoding="utf-8"))
    _replace_atomically(root, LINK, lambda tmp: tmp.symlink_to(relative, target_is_directory=True))
    snapshot.removed = prune_snapshots(root, keep=snapshots_kept, current=snapshot.path)
    return snapshot


def write_partitions(con: duckdb.DuckDBPyConnection, table: str, column: str, folder: Path) -> None:
    """`table` as Hive-style partitions (`<column>=<value>/data_0.parquet`, the column in the folder name only),
    written one partition at a time: DuckDB's partitioned writer holds every night's rows in memory at once (the
    history of two nights of 1.2 M offers: 3 GB)."""
    relation = con.table(table)
    values = [value for (value,) in relation.select(duckdb.ColumnExpression(column)).distinct().fetchall()]
    for value in sorted(values, key=str):
        target = folder / f"{column}={value}"
        target.mkdir(parents=True)
        part = relation.filter(duckdb.ColumnExpression(column) == duckdb.ConstantExpression(value))
        part.select(duckdb.StarExpression(exclude=[column])).write_parquet(str(target / "data_0.parquet"),
                                                                          compression="zstd")


def prune_snapshots(root: Path, keep: int, current: Path) -> list[Path]:
    """Remove all but the newest `keep` snapshots (names sort by time), never the current one; also the leftovers
    of exports that were killed midway."""
    snapshots = root / SNAPSHOTS
    removed = []
    for stale in snapshots.glob(".*.tmp"):
        shutil.rmtree(stale, ignore_errors=True)
    finished = sorted(p for p in snapshots.iterdir() if p.is_dir() and not p.name.startswith("."))
    for old in finished[: max(len(finished) - max(keep, 1), 0)]:
        if old != current:
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
    return removed
