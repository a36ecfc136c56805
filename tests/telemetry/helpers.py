"""Slices of the bundled sample telemetry (data/samples/telemetry/published_benchmarks.csv) for tests."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from tasks.ingest.registry import FileOutcome
from tasks.telemetry.ingest import ingest_telemetry_file
from tests import configured
from tests.conftest import TELEMETRY_SAMPLES

SAMPLE = TELEMETRY_SAMPLES / "published_benchmarks.csv"


def sample_rows(*run_ids: str) -> pl.DataFrame:
    """Rows of the sample as text, in the order asked for."""
    frame = pl.read_csv(SAMPLE, infer_schema=False)
    return pl.concat([frame.filter(pl.col("run_id") == r) for r in run_ids])


def ingest(con: duckdb.DuckDBPyConnection, path: Path, at: datetime | None = None) -> FileOutcome:
    return ingest_telemetry_file(con, path, configured.aliases(), at or datetime.now(UTC),
                                 **configured.telemetry_options())


def current_runs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    return con.sql("select * from core.telemetry_runs order by run_id").pl()


def rejected(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    return con.sql("select * from quarantine.rejected_rows order by source_file, source_line").pl()
