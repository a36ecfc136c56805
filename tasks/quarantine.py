"""Quarantine: failing rows and unreadable files are stored with their reason, never dropped."""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from tasks.warehouse import execute, registered

REJECTED_ROW_COLUMNS = ("source_file", "source_line", "failed_check", "raw_values", "content_sha256")


def quarantine_rows(
    con: duckdb.DuckDBPyConnection, dataset: str, rejected: pl.DataFrame, quarantined_at: datetime
) -> int:
    """Store rejected rows. `rejected` has the columns of REJECTED_ROW_COLUMNS (raw_values as JSON text)."""
    if rejected.height == 0:
        return 0
    with registered(con, "rejected_rows", rejected.select(REJECTED_ROW_COLUMNS)):
        execute(con, "common/insert_rejected_rows", {"dataset": dataset, "quarantined_at": quarantined_at})
    return rejected.height


def quarantine_file(
    con: duckdb.DuckDBPyConnection,
    dataset: str,
    source_file: str,
    sha256: str | None,
    error: str,
    quarantined_at: datetime,
) -> None:
    execute(
        con,
        "common/insert_rejected_file",
        {
            "dataset": dataset,
            "source_file": source_file,
            "sha": sha256,
            "error": error,
            "quarantined_at": quarantined_at,
        },
    )


def count_by_reason(rejected: pl.DataFrame) -> dict[str, int]:
    if rejected.height == 0:
        return {}
    counts = rejected.group_by("failed_check").len().sort("len", descending=True)
    return dict(zip(counts["failed_check"].to_list(), counts["len"].to_list(), strict=True))
