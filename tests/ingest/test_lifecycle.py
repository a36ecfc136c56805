"""The lifecycle frees DuckDB's row order only where it stores; reads keep it (a record's line is its row's place)."""

from __future__ import annotations

import duckdb
import pytest

from tasks.telemetry.ingest import TelemetryDataset
from tests.telemetry.helpers import SAMPLE, ingest

# The bundled telemetry sample: a header and 336 records on lines 2..337.
SAMPLE_RECORDS, FIRST_LINE, LAST_LINE = 336, 2, 337


def _order_kept(con: duckdb.DuckDBPyConnection) -> bool:
    return con.sql("select current_setting('preserve_insertion_order')").fetchall()[0][0]


def _raw_lines(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int, int]:
    return con.sql("select count(*), count(distinct source_line), min(source_line), max(source_line) "
                   "from raw.telemetry_records").fetchall()[0]


def test_the_row_order_is_kept_again_after_a_stored_file(con) -> None:  # noqa: ANN001
    assert _order_kept(con)
    assert ingest(con, SAMPLE).status == "loaded"
    assert _order_kept(con)
    assert _raw_lines(con) == (SAMPLE_RECORDS, SAMPLE_RECORDS, FIRST_LINE, LAST_LINE)


def test_a_store_that_fails_leaves_nothing_and_the_next_read_keeps_file_order(con, monkeypatch) -> None:  # noqa: ANN001
    # Fault: the store fails after writing the raw records, with the row order freed. The file's transaction
    # is rolled back (nothing stored) and the order is kept again, so the retried file's lines are right.
    real_store = TelemetryDataset.store

    def failing_store(self, con, file):  # noqa: ANN001, ANN202
        real_store(self, con, file)
        raise RuntimeError("disk full while storing")

    monkeypatch.setattr(TelemetryDataset, "store", failing_store)
    with pytest.raises(RuntimeError, match="disk full"):
        ingest(con, SAMPLE)
    assert _order_kept(con)
    assert con.sql("select count(*) from raw.telemetry_records").fetchall()[0][0] == 0
    assert con.sql("select count(*) from core.telemetry_runs").fetchall()[0][0] == 0
    monkeypatch.setattr(TelemetryDataset, "store", real_store)
    assert ingest(con, SAMPLE).status == "loaded"
    assert _raw_lines(con) == (SAMPLE_RECORDS, SAMPLE_RECORDS, FIRST_LINE, LAST_LINE)
