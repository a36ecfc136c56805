"""The published tables as Parquet for readers elsewhere: a new dated snapshot per night behind an atomically
swapped `LATEST` pointer, read back with polars and with DuckDB and compared with the published database."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

import tasks.publishing.parquet as parquet
from tasks.publishing.database import PUBLISHED_TABLES
from tasks.publishing.night import publish_night
from tests import configured
from tests.ranking.conftest import FixedThroughput


def night(con, day: int, target: Path):
    return publish_night(con, FixedThroughput(), date(2026, 1, day), datetime(2026, 1, day, 2, tzinfo=UTC),
                         configured.resources(published=target), **configured.night())


def canonical(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """Same column order, rows sorted on every column: equal frames compare equal whatever the file order."""
    # the same instants: DuckDB's session zone shows as "Etc/UTC", Parquet's UTC-adjusted timestamps as "UTC"
    zoned = [c for c, t in frame.schema.items() if isinstance(t, pl.Datetime) and t.time_zone is not None]
    frame = frame.with_columns(pl.col(c).dt.convert_time_zone("UTC") for c in zoned)
    return frame.select(columns).sort(columns, nulls_last=True)


def assert_same(got: pl.DataFrame, expected: pl.DataFrame, table: str) -> None:
    from polars.testing import assert_frame_equal

    try:
        assert_frame_equal(got, expected, check_exact=True)
    except AssertionError as error:
        raise AssertionError(f"{table}: {error}") from None


def test_each_night_writes_a_snapshot_that_polars_and_duckdb_read_back_equal(aws_prices, gpucost_home):
    target = gpucost_home / "published.duckdb"
    first = night(aws_prices, 6, target)
    second = night(aws_prices, 7, target)
    root = gpucost_home / "published-parquet"   # config/ranking.toml: parquet_dir, relative to GPUCOST_HOME
    assert first.parquet is not None and second.parquet is not None
    assert first.parquet.path == root / "snapshots" / "2026-01-06T020000Z"
    assert second.parquet.path == root / "snapshots" / "2026-01-07T020000Z"
    # the pointer file and the symlink both name the newest night; the previous snapshot is kept untouched
    assert (root / "LATEST").read_text() == "snapshots/2026-01-07T020000Z\n"
    assert parquet.latest_snapshot(root) == second.parquet.path
    assert (root / "latest").resolve() == second.parquet.path.resolve()
    assert first.parquet.path.is_dir() and not list((root / "snapshots").glob(".*"))
    # history: one Hive partition per night
    history = second.parquet.files["gpu_cost_ranking_history"]
    assert sorted(p.name for p in history.iterdir()) == ["publish_date=2026-01-06", "publish_date=2026-01-07"]

    snapshot = parquet.latest_snapshot(root)
    reader = duckdb.connect()
    with duckdb.connect(str(target), read_only=True) as published:
        for table in PUBLISHED_TABLES:
            expected = published.table(table).pl()
            columns = expected.columns
            path = snapshot / table if table in parquet.PARTITIONED else snapshot / f"{table}.parquet"
            pattern = str(path / "**" / "*.parquet") if path.is_dir() else str(path)
            by_polars = pl.read_parquet(pattern, hive_partitioning=path.is_dir())
            by_duckdb = reader.sql("select * from read_parquet($path, hive_partitioning = true)",
                                   params={"path": pattern}).pl()
            assert sorted(by_polars.columns) == sorted(columns), table
            assert_same(canonical(by_polars, columns), canonical(expected, columns), table)
            assert_same(canonical(by_duckdb, columns), canonical(expected, columns), table)
            assert by_polars.height == second.published.rows[table], table
    # the AWS sample priced for 5 workloads x 932 offers x 2 cluster choices each night (see test_publish): 2 nights
    assert second.published.rows["gpu_cost_ranking_history"] == 2 * 2 * 5 * 932


def test_old_snapshots_are_pruned_and_a_failed_export_leaves_the_pointer(aws_prices, gpucost_home, monkeypatch,
                                                                      tmp_path):
    monkeypatch.setenv("GPUCOST_PARQUET_DIR", str(tmp_path / "shared"))
    root = tmp_path / "shared"
    target = gpucost_home / "published.duckdb"
    for day in (6, 7):
        night(aws_prices, day, target)
    # kept: 7 by default, so both nights are there; keeping 1 removes the older
    assert len(list((root / "snapshots").iterdir())) == 2
    removed = parquet.prune_snapshots(root, keep=1, current=parquet.latest_snapshot(root))
    assert [p.name for p in removed] == ["2026-01-06T020000Z"]

    # an export that fails midway (a table it cannot read) leaves no half snapshot and the pointer where it was
    monkeypatch.setattr(parquet, "PUBLISHED_TABLES", (*PUBLISHED_TABLES, "no_such_table"))
    outcome = night(aws_prices, 8, target)
    assert outcome.parquet is None
    assert any("Parquet copy of the published tables not written" in note for note in outcome.notes)
    assert parquet.latest_snapshot(root) == root / "snapshots" / "2026-01-07T020000Z"
    assert sorted(p.name for p in (root / "snapshots").iterdir()) == ["2026-01-07T020000Z"]
    # ... while the published database itself has the new night
    with duckdb.connect(str(target), read_only=True) as db:
        assert db.sql("select max(publish_date) from gpu_cost_ranking_history").fetchall() == [(date(2026, 1, 8),)]


@pytest.fixture(autouse=True)
def _default_parquet_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUCOST_PARQUET_DIR", raising=False)
