"""Build the published database (what users open) next to the working warehouse, atomically.

The file is written under a temporary name in the same folder, checkpointed and detached, then
`os.replace`d over the previous one: a reader that has the old file open keeps its snapshot, new
connections see the new night, and a publish killed midway leaves the previous file untouched.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from tasks.publishing.ownership import check_database_target, remember_written
from tasks.settings import SQL_DIR
from tasks.warehouse import execute, query, registered

# In order; each is sql/publish/<name>.sql creating published.<name> (gpu_cost_ranking: a view of the newest night
# of gpu_cost_ranking_history, so it comes after it).
PUBLISHED_TABLES = (
    "gpu_cost_ranking_history",
    "gpu_cost_ranking",
    "prices_current",
    "price_history",
    "gpu_specs",
    "model_versions",
    "quarantine_summary",
    "price_fetch_status",
)

# What every published table and column is, with its units: the one list (sql/publish/comment_statements.sql)
COMMENTS = SQL_DIR / "publish" / "comments.csv"


@dataclass
class PublishedFile:
    path: Path
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    size_bytes: int = 0


def temporary_path(target: Path) -> Path:
    """Same folder (so os.replace is an atomic rename), a name no reader opens."""
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


def remove_half_written(target: Path, pid: int) -> list[Path]:
    """The temporary file process `pid` was writing when it was killed (`temporary_path` in that process)."""
    removed = []
    for path in target.parent.glob(f".{target.name}.{pid}.tmp*"):
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Leftovers of publishes that were killed midway (never the published file itself)."""
    removed = []
    for stale in target.parent.glob(f".{target.name}.*.tmp*"):
        stale.unlink(missing_ok=True)
        removed.append(stale)
    return removed


def build_published(
    con: duckdb.DuckDBPyConnection,
    target: Path,
    model_versions: pl.DataFrame,
    price_window_days: int,
    home: Path,
) -> PublishedFile:
    """Write every published table from the warehouse `con` into a new file, then swap it into place. An existing
    `target` is replaced only if gpucost made it (tasks/publishing/ownership.py; `home` keeps the record of what
    it wrote: the state folder)."""

    started = time.perf_counter()
    check_database_target(home, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    tmp = temporary_path(target)
    result = PublishedFile(path=target)
    execute(con, "publish/attach", {"path": str(tmp)})
    try:
        with registered(con, "publish_model_versions", model_versions):
            for table in PUBLISHED_TABLES:
                params = {"window_days": price_window_days} if table == "price_history" else None
                execute(con, f"publish/{table}", params)
        for (statement,) in query(con, "publish/comment_statements", {"path": str(COMMENTS)}).fetchall():
            con.execute(statement)
        # the run summary's order: tonight's ranking first
        for table in sorted(PUBLISHED_TABLES, key=lambda name: name != "gpu_cost_ranking"):
            [(result.rows[table],)] = query(con, "publish/row_count", {"relation": f"published.{table}"}).fetchall()
        execute(con, "publish/marker", {"published_at": datetime.now(UTC)})
        execute(con, "publish/marker_comments")
        execute(con, "publish/detach")
    except BaseException:
        con.execute("detach database if exists published")
        tmp.unlink(missing_ok=True)
        raise
    check_database_target(home, target)  # still ours (or absent) at the moment it is replaced
    os.replace(tmp, target)
    remember_written(home, target)
    result.size_bytes = target.stat().st_size
    result.seconds = time.perf_counter() - started
    return result
