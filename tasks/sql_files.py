"""Named SQL files: `sql/<name>.sql` read once, run with bound parameters, frames registered for one block, and
all-or-nothing transactions.

The bottom of the storage layer: the warehouse and the landing zone both run their SQL through it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

import duckdb

from tasks.settings import SQL_DIR


@cache
def sql_text(name: str) -> str:
    """The text of `sql/<name>.sql` (name without the suffix, e.g. `prices/merge_observations`)."""
    path = SQL_DIR / f"{name}.sql"
    if not path.exists():
        raise FileNotFoundError(f"SQL file {path} is missing")
    return path.read_text(encoding="utf-8")


def execute(
    con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, Any] | Sequence[Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """Run one statement from `sql/<name>.sql` with bound parameters."""
    if params is None:
        return con.execute(sql_text(name))
    return con.execute(sql_text(name), params)


def query(
    con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, Any] | Sequence[Any] | None = None
) -> duckdb.DuckDBPyRelation:
    """A relation from `sql/<name>.sql` (one query, bound parameters): `.pl()` for polars, `.fetchall()`."""
    return con.sql(sql_text(name), params=params)


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, frame: object) -> Iterator[None]:
    """Expose a polars/pandas/arrow frame to SQL under a fixed relation name for one block."""
    con.register(name, frame)
    try:
        yield
    finally:
        # the block failed and aborted the transaction: its own error is the one to report
        with contextlib.suppress(duckdb.TransactionException):
            con.unregister(name)


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All or nothing: a file's rows land together or not at all."""
    con.execute("begin transaction")
    try:
        yield con
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")
