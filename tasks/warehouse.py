"""The working DuckDB warehouse: connect, migrate (idempotent DDL from `sql/ddl`), run named SQL files.

SQL lives in `sql/*.sql`; Python only names the file and binds parameters.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from tasks.landing_zone import land_raw_record_tables
from tasks.settings import SQL_DIR
from tasks.sql_files import execute, query, registered, sql_text, transaction

__all__ = ["execute", "query", "registered", "sql_text", "transaction"]  # the SQL helpers' usual import path


class WarehouseBusyError(RuntimeError):
    """Another process holds the DuckDB file lock."""


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Create schemas, tables and views. Every DDL file is idempotent, so this runs on every connect; a change
    the DDL cannot make in place (a dropped constraint; the JSON record tables moved to the landing zone,
    tasks/landing_zone.py) is made once, in one transaction (sql/migrations)."""
    _run_ddl(con)
    if query(con, "migrations/telemetry_runs_keyed").fetchall()[0][0]:
        with transaction(con):
            execute(con, "migrations/set_aside_keyed_telemetry_runs")
            _run_ddl(con)
            execute(con, "migrations/restore_keyed_telemetry_runs")
    land_raw_record_tables(con)


def _run_ddl(con: duckdb.DuckDBPyConnection) -> None:
    for ddl in sorted((SQL_DIR / "ddl").glob("*.sql")):
        con.execute(ddl.read_text(encoding="utf-8"))
    # the telemetry contract's FLOPs formulas, which the staging and feature SQL call (a prediction creates them
    # in its own in-memory database: they are the contract's, not the warehouse's)
    execute(con, "contract/flops_macros")


def _busy_message(path: Path, error: Exception) -> str:
    pid = re.search(r"PID (\d+)", str(error))
    holder = f"process {pid.group(1)}" if pid else "another process"
    return (
        f"{holder} holds the DuckDB file {path} (DuckDB allows one writer and no readers beside it). "
        "Close that session or wait for the running job, then retry."
    )


# `gpucost sql`: a read-only connection that cannot reach any other file or the network, change a setting,
# or install/load an extension (COPY ... TO, ATTACH, EXPORT DATABASE, read_csv('/etc/passwd'), SET: refused).
SANDBOXED = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}


def connect(
    path: Path, read_only: bool = False, config: Mapping[str, Any] | None = None,
    migrate_schema: bool = True,
) -> duckdb.DuckDBPyConnection:
    """Open (and on first use create and migrate) the warehouse; `migrate_schema=False` opens it as it is."""
    path = Path(path)
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.exists():
        raise FileNotFoundError(f"no warehouse at {path}: run `gpucost run` (or an ingest) first")
    try:
        con = duckdb.connect(str(path), read_only=read_only, config=dict(config or {}))
    except duckdb.IOException as error:
        if "lock" in str(error).lower():
            raise WarehouseBusyError(_busy_message(path, error)) from error
        raise
    if not read_only and migrate_schema:
        migrate(con)
    return con


def check_warehouse_free(path: Path) -> None:
    """Raise WarehouseBusyError (naming the process that holds it, e.g. a user's open DuckDB session) now,
    before a run starts, rather than letting every step fail on it in turn.

    Opened read-write (a reader holding the file blocks a writer too) but not migrated, so the check itself
    changes nothing; a damaged file is left to the pre-flight check, which names it with the next step."""

    if not path.exists():
        return
    try:
        connect(path, migrate_schema=False).close()
    except WarehouseBusyError:
        raise
    except duckdb.Error:
        return


@contextmanager
def warehouse(path: Path, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(path, read_only=read_only)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def setting_for_block(con: duckdb.DuckDBPyConnection, setter: str, parameter: str, value: Any,
                      previous: Any) -> Iterator[None]:
    """One DuckDB setting at `value` for the block and back at `previous` afterwards: `setter` names the SQL file
    (sql/<setter>.sql) that sets it from its bound `parameter`."""
    execute(con, setter, {parameter: value})
    try:
        yield
    finally:
        execute(con, setter, {parameter: previous})


@contextmanager
def memory_capped(con: duckdb.DuckDBPyConnection, memory_limit: str, spill: Path) -> Iterator[None]:
    """DuckDB's memory capped at `memory_limit` for the block, spilling to `spill`; the previous cap is restored
    afterwards (the spill folder stays: DuckDB does not allow switching it once used). Ingest and publish both."""
    previous_limit, temp_directory = query(con, "publish/duckdb_limits").fetchall()[0]
    if temp_directory != str(spill):
        spill.mkdir(parents=True, exist_ok=True)
        # this connection already spilled to its own folder, which DuckDB then keeps: spill there
        with contextlib.suppress(duckdb.Error):
            execute(con, "publish/set_temp_directory", {"temp_directory": str(spill)})
    with setting_for_block(con, "publish/set_memory_limit", "memory_limit", memory_limit, previous_limit):
        yield


@contextmanager
def row_order_free(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """DuckDB writes the block's tables on every thread, in no particular row order (the ranking and the
    published tables are not stored sorted: readers order by rank or date); the setting is restored afterwards."""
    [(preserve_order,)] = query(con, "common/insertion_order").fetchall()
    with setting_for_block(con, "common/set_insertion_order", "preserve", False, preserve_order):
        yield


@contextmanager
def ingest_limits(con: duckdb.DuckDBPyConnection, memory_limit: str, spill: Path) -> Iterator[None]:
    """Cap DuckDB's memory while a file is ingested (config/settings.toml [ingest]) with a spill folder, so a
    file of any size streams through DuckDB's out-of-core operators instead of growing the process."""
    # the lifecycle frees the row order where it stores (tasks/ingest/lifecycle.py::_decide); the next file's
    # read needs it kept (a record's line is its row's place), so it is restored here, after commit or rollback
    [(preserve_order,)] = query(con, "common/insertion_order").fetchall()
    try:
        with memory_capped(con, memory_limit, spill):
            yield
    finally:
        execute(con, "common/set_insertion_order", {"preserve": preserve_order})
