"""Quarantine: failing rows and unreadable files are stored with their reason, never dropped."""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from tasks.warehouse import execute, query, registered


def quarantine_staged_rows(
    con: duckdb.DuckDBPyConnection, dataset: str, source_file: str, sha256: str, quarantined_at: datetime
) -> None:
    """Store the staged rows that failed a check (staging_file_rows joined to staging_file_failures)."""
    execute(con, "ingest/insert_rejected_rows", {
        "dataset": dataset, "source_file": source_file, "sha": sha256, "quarantined_at": quarantined_at,
    })


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


def count_by_reason(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Rejected rows of the file being ingested per failed check, most frequent first."""
    return dict(query(con, "common/count_by_value",
                     {"table": "staging_file_failures", "column": "failed_check"}).fetchall())


REJECTED_ROW_COLUMNS = ("source_file", "source_line", "failed_check", "raw_values", "content_sha256")


def quarantine_rows(
    con: duckdb.DuckDBPyConnection, dataset: str, rejected: pl.DataFrame, quarantined_at: datetime
) -> int:
    """Store rejected rows given as a frame (REJECTED_ROW_COLUMNS; raw_values as JSON text): for sources whose
    unit fails before it has staged rows (e.g. an MLflow run that cannot become a row)."""
    if rejected.height == 0:
        return 0
    with registered(con, "rejected_rows", rejected.select(REJECTED_ROW_COLUMNS)):
        execute(con, "common/insert_rejected_rows", {"dataset": dataset, "quarantined_at": quarantined_at})
    return rejected.height
