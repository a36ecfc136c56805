"""Shared helpers for the price tests: ingest sources into a warehouse connection, count tables."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb

from tasks.ingest.registry import FileOutcome
from tasks.prices.ingest import PriceSource, ingest_price_file
from tests import configured

COUNT_QUERIES = {
    "raw.ingested_files": "select count(*) from raw.ingested_files",
    "landed files": "select count(landed_path) from raw.ingested_files",
    "core.price_observations": "select count(*) from core.price_observations",
    "quarantine.rejected_rows": "select count(*) from quarantine.rejected_rows",
    "quarantine.rejected_files": "select count(*) from quarantine.rejected_files",
}


def ingest(con: duckdb.DuckDBPyConnection, sources: list[PriceSource], at: datetime | None = None) -> list[FileOutcome]:
    configured.load_tables(con)
    aliases = configured.aliases()
    at = at or datetime.now(UTC)
    return [ingest_price_file(con, source, aliases, at, **configured.price_options()) for source in sources]


def source(path: Path, provider: str, fmt: str, **options: object) -> PriceSource:
    return PriceSource(Path(path), provider, fmt, dict(options))


def table_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {table: con.execute(sql).fetchone()[0] for table, sql in COUNT_QUERIES.items()}
