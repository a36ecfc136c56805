"""Parallel ingest: read/stage/validate away from the warehouse (tasks.ingest.lifecycle.stage_file), one writer
applying the results in order (apply_staged), run by prefect-dask's DaskTaskRunner on a real
distributed.LocalCluster (2 worker processes on loopback, stopped at the end).

The reference is the sequential run on the same files: every raw/core/quarantine/features table must have the
same rows (count and an order-free checksum of every row's text), the outcomes the same statuses and counts.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import psutil
import pytest

from tests.conftest import PRICE_SAMPLES, TELEMETRY_SAMPLES

INGESTED_AT = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
BAD_CATALOG = "name,price\nnot,a catalog\n"  # fake on purpose: a file the SkyPilot adapter must refuse


def batch(folder: Path) -> tuple[list[object], list[Path]]:
    """Bundled files in an order where the writer's part matters: the dated AWS p5.48xlarge price history
    first, then the SkyPilot AWS catalog (its p5.48xlarge us-east-1 rows are compared with the history rows
    stored just before: the price move), a GCP billing catalog excerpt (an adapter that returns a frame), the two
    telemetry files; plus faults: a file that is no SkyPilot catalog, a missing file, and the SkyPilot AWS
    catalog again under another name (same bytes: 'already ingested' when its turn comes)."""
    from tasks.prices.ingest import PriceSource
    from tasks.sources import configured_price_sources

    configured = {Path(s.path).name: s for s in configured_price_sources()}  # with their adapter options
    folder.mkdir(parents=True, exist_ok=True)
    bad = folder / "not_a_catalog.csv"
    bad.write_text(BAD_CATALOG, encoding="utf-8")
    again = folder / "aws_again.csv"
    shutil.copyfile(PRICE_SAMPLES / "skypilot_v8_aws_gpu_subset.csv", again)
    prices = [
        configured["aws_p5.48xlarge_us-east-1_ondemand_daily_pricing_api.csv"],
        configured["skypilot_v8_aws_gpu_subset.csv"],
        PriceSource(bad, "aws", "skypilot"),
        PriceSource(folder / "missing.csv", "aws", "skypilot"),
        PriceSource(again, "aws", "skypilot"),
        configured["gcp_billing_catalog_skus_page_excerpt_opencost.json"],
    ]
    telemetry = [TELEMETRY_SAMPLES / "published_benchmarks.csv",
                 TELEMETRY_SAMPLES / "published_benchmarks_dgxc_torchtitan.csv"]
    return prices, telemetry


def table_checksums(con: duckdb.DuckDBPyConnection, run_times: tuple[datetime, ...] = ()) -> dict[str, tuple]:
    """{table: (rows, sum of the hashes of each row's text)} over raw, core, quarantine and features: equal
    sums = equal multisets of rows. Timestamps equal to a run's own clock (`run_times`: the flows stamp
    ingested_at/quarantined_at with `now`) are replaced by a marker, so runs at different times compare."""
    tables = con.table("information_schema.tables").filter(
        "table_schema in ('raw', 'core', 'quarantine', 'features') and table_type = 'BASE TABLE'"
    ).project("table_schema || '.' || table_name as name").order("name").fetchall()
    result = {}
    for (table,) in tables:
        relation = con.table(table)
        if table == "raw.ingested_files":  # {reason: count} as a set: the key order says nothing
            relation = relation.project("* replace (to_json(map_from_entries(list_sort(map_entries("
                                        "skipped_by_reason::map(varchar, bigint))))) as skipped_by_reason)")
        columns = []
        for name, kind in zip(relation.columns, relation.types, strict=True):
            column = duckdb.ColumnExpression(name)
            if str(kind) == "TIMESTAMP WITH TIME ZONE" and run_times:
                is_run_time = column.isin(*[duckdb.ConstantExpression(t) for t in run_times])
                column = duckdb.CaseExpression(is_run_time, duckdb.ConstantExpression("<run time>")).otherwise(
                    column.cast(duckdb.sqltype("VARCHAR"))).alias(name)
            columns.append(column)
        rows = relation.select(*columns).project("cast(struct_pack(*COLUMNS(*)) as varchar) as row_text")
        result[table] = tuple(rows.aggregate("count(*), sum(hash(row_text))").fetchall()[0])
    return result


def summary(outcomes: list[object]) -> list[tuple]:
    return [(Path(o.source_file).name, o.status, o.rows_read, o.rows_loaded, o.rows_quarantined, o.error)
            for o in outcomes]


def test_staged_on_the_side_then_applied_in_order_equals_the_sequential_ingest(tmp_path: Path) -> None:
    """No task runner: stage_file for every price file first (as workers would, before anything is stored),
    then apply_staged in order, against ingest_file one file at a time, same ingest time: identical tables.
    (Telemetry, which has no writer-side columns, goes through the same functions in the Dask test below.)"""
    from tasks.ingest.lifecycle import apply_staged, ingest_file, stage_file, stage_jobs
    from tasks.prices.ingest import PriceDataset
    from tasks.reference import load_reference_tables, read_aliases, reference_paths
    from tasks.warehouse import connect, ingest_memory_limit

    prices, _ = batch(tmp_path / "inputs")
    datasets = [(PriceDataset(read_aliases()), prices)]

    sequential = connect(tmp_path / "sequential.duckdb")
    load_reference_tables(sequential)
    expected = [ingest_file(sequential, dataset, source, INGESTED_AT)
                for dataset, files in datasets for source in files]

    staged_con = connect(tmp_path / "staged.duckdb")
    load_reference_tables(staged_con)
    outcomes = []
    for dataset, files in datasets:
        jobs = stage_jobs(staged_con, dataset, files, INGESTED_AT, tmp_path / "work", reference_paths(),
                          ingest_memory_limit())
        staged = [stage_file(job) for job in jobs]  # all staged before the first is stored
        outcomes += [apply_staged(staged_con, dataset, s, INGESTED_AT) for s in staged]

    assert summary(outcomes) == summary(expected)
    statuses = {Path(o.source_file).name: o.status for o in outcomes}
    assert statuses["not_a_catalog.csv"] == statuses["missing.csv"] == "quarantined"
    assert statuses["aws_again.csv"] == "already_ingested"  # same bytes as skypilot_v8_aws_gpu_subset.csv
    assert sum(o.status == "loaded" for o in outcomes) == 3  # the history, the AWS catalog, the GCP excerpt
    assert table_checksums(staged_con) == table_checksums(sequential)
    # the case the writer's part exists for: SkyPilot's p5.48xlarge us-east-1 on-demand rows have an earlier
    # observation of the same offer only in the history file stored before them (their price move)
    compared = staged_con.sql(
        "select count(distinct catalog.source_line) from core.price_observations as catalog "
        "inner join core.price_observations as history using (provider, region, instance_type, pricing) "
        "where catalog.source_file like '%skypilot_v8_aws%' and history.source_file like '%daily_pricing%' "
        "and history.observed_at <= catalog.observed_at").fetchall()[0][0]
    assert compared > 0
    assert not any((tmp_path / "work").iterdir())  # each staged folder removed once applied

    # idempotent: the same batch again stages nothing registered and changes no table
    tables = table_checksums(staged_con)
    for dataset, files in datasets:
        jobs = stage_jobs(staged_con, dataset, files, INGESTED_AT, tmp_path / "work", reference_paths(),
                          ingest_memory_limit())
        again = [apply_staged(staged_con, dataset, stage_file(job), INGESTED_AT) for job in jobs]
        assert {o.status for o in again if Path(o.source_file).name != "missing.csv"} == {"already_ingested"}
    # the missing file is quarantined again (never registered: it is read again next time); nothing else moves
    tables["quarantine.rejected_files"] = table_checksums(staged_con)["quarantine.rejected_files"]
    assert table_checksums(staged_con) == tables
    sequential.close()
    staged_con.close()


def _children() -> set[int]:
    """This process's descendants, except multiprocessing's resource tracker (started with the first worker
    process, it lives as long as the interpreter and exits with it)."""
    return {child.pid for child in psutil.Process().children(recursive=True)
            if "multiprocessing.resource_tracker" not in " ".join(child.cmdline())}


@pytest.mark.flow
def test_dask_runner_ingests_like_the_sequential_flows_and_stops_its_cluster(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real flows twice on the same files: sequential (the default) and with [ingest.runner] kind = "dask"
    (a LocalCluster of 2 worker processes per flow). Same tables, same outcomes, the bad files quarantined
    (the batch goes on); no process of the clusters is left."""
    from flows.ingest_prices import ingest_prices
    from flows.ingest_telemetry import ingest_telemetry
    from tasks.warehouse import connect

    prices, telemetry = batch(tmp_path / "inputs")

    def night(home: Path) -> tuple[list[object], dict[str, tuple]]:
        monkeypatch.setenv("GPUCOST_HOME", str(home))
        outcomes = [*ingest_prices(prices), *ingest_telemetry(telemetry)]
        con = connect(home / "warehouse.duckdb")
        run_times = tuple(t for (t,) in con.sql(
            "select distinct ingested_at from raw.ingested_files "
            "union select distinct quarantined_at from quarantine.rejected_files").fetchall())
        checksums = table_checksums(con, run_times)
        con.close()
        return outcomes, checksums

    monkeypatch.delenv("GPUCOST_INGEST_RUNNER", raising=False)
    expected, expected_tables = night(tmp_path / "sequential")

    before = _children()
    monkeypatch.setenv("GPUCOST_INGEST_RUNNER", "dask")
    monkeypatch.setenv("GPUCOST_INGEST_WORKERS", "2")
    outcomes, tables = night(tmp_path / "dask")
    assert summary(outcomes) == summary(expected)
    assert tables == expected_tables
    errors = {Path(o.source_file).name: o.error for o in outcomes if o.status == "quarantined"}
    assert set(errors) == {"not_a_catalog.csv", "missing.csv"}
    assert "not a SkyPilot catalog" in str(errors["not_a_catalog.csv"])
    assert "file not found" in str(errors["missing.csv"])
    assert not any((tmp_path / "dask" / "staging").iterdir())  # the work folders are removed
    assert _children() <= before  # the LocalCluster's scheduler and worker processes are gone
