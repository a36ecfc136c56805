"""Parallel ingest: read/stage/validate away from the warehouse (tasks.ingest.lifecycle.stage_unit), one writer
applying the results in order (apply), run by Prefect's ThreadPoolTaskRunner (kind = "threads", 2 threads)
and by prefect-dask's DaskTaskRunner on a real distributed.LocalCluster (2 worker processes on loopback,
stopped at the end).

The reference is the sequential run on the same files: every raw/core/quarantine/features table must have the
same rows (count and an order-free checksum of every row's text), the outcomes the same statuses and counts.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import psutil
import pytest

from tasks import config_files
from tests import configured
from tests.conftest import PRICE_SAMPLES, TELEMETRY_SAMPLES

INGESTED_AT = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
BAD_CATALOG = "name,price\nnot,a catalog\n"  # fake on purpose: a file the SkyPilot adapter must refuse


def batch(folder: Path) -> tuple[list[object], list[Path]]:
    """Bundled files in an order where the writer's part matters: the dated AWS p5.48xlarge price history
    first, then the SkyPilot AWS catalog (its p5.48xlarge us-east-1 rows are compared with the history rows
    stored just before: the price move), a GCP billing catalog excerpt (an adapter that returns a frame), the
    AWS offer CSV sample (on-demand, reserved terms and storage volume prices), the two
    telemetry files; plus faults: a file that is no SkyPilot catalog, a missing file, and the SkyPilot AWS
    catalog again under another name (same bytes: 'already ingested' when its turn comes)."""
    from tasks.prices.ingest import PriceSource
    from tasks.sources import configured_price_sources

    # with their adapter options
    configured = {Path(s.path).name: s for s in configured_price_sources(config_files.sources())}
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
        configured["aws_pricelist_ec2_offer_index_sample_v20250912225308.csv"],
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


@dataclass(frozen=True)
class Reference:
    """The sequential ingest of the batch (ingest_file one file at a time, the flows' default path)."""

    prices: list[object]
    telemetry: list[Path]
    outcomes: list[tuple]
    tables: dict[str, tuple]            # exact checksums (ingest time INGESTED_AT)
    tables_any_time: dict[str, tuple]   # with INGESTED_AT masked, to compare with a run at another time


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    from tasks.contract.features import refresh_feature_table
    from tasks.ingest.lifecycle import ingest_file
    from tasks.prices.ingest import price_dataset
    from tasks.telemetry.ingest import telemetry_dataset, telemetry_source
    from tasks.warehouse import connect

    work = tmp_path_factory.mktemp("dask-ingest")
    prices, telemetry = batch(work / "inputs")
    con = connect(work / "sequential.duckdb")
    configured.load_tables(con)
    aliases = configured.aliases()
    prices_ = price_dataset(aliases, configured.settings().validation.prices, configured.resources().reference)
    telemetry_ = telemetry_dataset(aliases, configured.vocabulary(), config_files.telemetry().validation)
    outcomes = [ingest_file(con, prices_, source, INGESTED_AT, configured.limits()) for source in prices]
    outcomes += [ingest_file(con, telemetry_, telemetry_source(path), INGESTED_AT, configured.limits())
                 for path in telemetry]
    refresh_feature_table(con, configured.reference())  # as the telemetry flow does
    result = Reference(prices, telemetry, summary(outcomes), table_checksums(con),
                       table_checksums(con, (INGESTED_AT,)))
    con.close()
    return result


def test_staged_on_the_side_then_applied_in_order_equals_the_sequential_ingest(
    reference: Reference, tmp_path: Path
) -> None:
    """No task runner: stage_unit for every file first (as workers would, before anything is stored), then
    apply in order, against ingest_file (staged inline) one file at a time at the same ingest time: identical
    tables.
    Then the same batch again: nothing staged or stored twice."""
    from tasks.contract.features import refresh_feature_table
    from tasks.ingest.lifecycle import apply, stage_jobs, stage_unit
    from tasks.prices.ingest import price_dataset
    from tasks.telemetry.ingest import telemetry_dataset, telemetry_source
    from tasks.warehouse import connect

    aliases = configured.aliases()
    datasets = [(price_dataset(aliases, configured.settings().validation.prices, configured.resources().reference),
                 reference.prices),
                (telemetry_dataset(aliases, configured.vocabulary(), config_files.telemetry().validation),
                 [telemetry_source(p) for p in reference.telemetry])]
    con = connect(tmp_path / "staged.duckdb")
    configured.load_tables(con)

    def ingest_batch() -> list[object]:
        outcomes = []
        for dataset, files in datasets:
            jobs = stage_jobs(con, dataset, files, INGESTED_AT, tmp_path / "work", configured.reference_files(),
                              configured.settings().ingest.memory_limit)
            staged = [stage_unit(job) for job in jobs]  # all staged before the first is stored
            outcomes += [apply(con, dataset, s, INGESTED_AT, configured.limits()) for s in staged]
        refresh_feature_table(con, configured.reference())
        return outcomes

    outcomes = ingest_batch()
    assert summary(outcomes) == reference.outcomes
    statuses = {Path(o.source_file).name: o.status for o in outcomes}
    assert statuses["not_a_catalog.csv"] == statuses["missing.csv"] == "quarantined"
    assert statuses["aws_again.csv"] == "already_ingested"  # same bytes as skypilot_v8_aws_gpu_subset.csv
    # loaded: the p5 history, the AWS catalog, the GCP excerpt, the AWS offer CSV and both telemetry files
    assert sum(o.status == "loaded" for o in outcomes) == 6
    assert table_checksums(con) == reference.tables
    # the case the writer's part exists for: SkyPilot's p5.48xlarge us-east-1 on-demand rows have an earlier
    # observation of the same offer only in the history file stored before them (their price move)
    compared = con.sql(
        "select count(distinct catalog.source_line) from core.price_observations as catalog "
        "inner join core.price_observations as history using (provider, region, instance_type, pricing) "
        "where catalog.source_file like '%skypilot_v8_aws%' and history.source_file like '%daily_pricing%' "
        "and history.observed_at <= catalog.observed_at").fetchall()[0][0]
    assert compared > 0
    assert not any((tmp_path / "work").iterdir())  # each staged folder removed once applied

    # idempotent: the same batch again stages nothing registered and changes no table
    tables = table_checksums(con)
    again = ingest_batch()
    assert {o.status for o in again if Path(o.source_file).name != "missing.csv"} == {"already_ingested"}
    # the missing file is quarantined again (never registered: it is read again next time); nothing else moves
    tables["quarantine.rejected_files"] = table_checksums(con)["quarantine.rejected_files"]
    assert table_checksums(con) == tables
    con.close()


def _children() -> set[int]:
    """This process's descendants, except multiprocessing's resource tracker (started with the first worker
    process, it lives as long as the interpreter and exits with it). A zombie (exited, not yet reaped: e.g. an
    earlier test's child on this pytest worker) has no command line any more and is listed; one gone is not."""
    pids = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if "multiprocessing.resource_tracker" in " ".join(child.cmdline()):
                continue
        except psutil.ZombieProcess:
            pass
        except psutil.NoSuchProcess:
            continue
        pids.add(child.pid)
    return pids


@pytest.mark.flow
@pytest.mark.parametrize("runner", ["threads", "dask"])
def test_parallel_runner_ingests_like_the_sequential_run_and_leaves_no_process(
    runner: str, reference: Reference, prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real flows with [ingest.runner] kind = "threads" (Prefect's thread pool, 2 threads) and "dask" (a
    LocalCluster of 2 worker processes per flow), chosen by GPUCOST_INGEST_RUNNER, on the batch: the same
    outcomes and tables as the sequential run (the flows stamp their own time: timestamps equal to a run's
    time are masked on both sides), the bad files quarantined while the batch goes on, no process of the
    clusters left."""
    from flows.ingest_prices import ingest_prices
    from flows.ingest_telemetry import ingest_telemetry
    from tasks.warehouse import connect

    home = tmp_path / "home"
    monkeypatch.setenv("GPUCOST_HOME", str(home))
    monkeypatch.setenv("GPUCOST_INGEST_RUNNER", runner)
    monkeypatch.setenv("GPUCOST_INGEST_WORKERS", "2")
    before = _children()
    outcomes = [*ingest_prices(reference.prices), *ingest_telemetry(reference.telemetry)]

    assert summary(outcomes) == reference.outcomes
    errors = {Path(o.source_file).name: o.error for o in outcomes if o.status == "quarantined"}
    assert set(errors) == {"not_a_catalog.csv", "missing.csv"}
    assert "not a SkyPilot catalog" in str(errors["not_a_catalog.csv"])
    assert "file not found" in str(errors["missing.csv"])
    con = connect(home / "warehouse.duckdb")
    run_times = tuple(t for (t,) in con.sql(  # prices and telemetry flows each stamp their own `now`
        "select distinct ingested_at from raw.ingested_files "
        "union select distinct quarantined_at from quarantine.rejected_files").fetchall())
    assert len(run_times) == 2
    assert table_checksums(con, run_times) == reference.tables_any_time
    con.close()
    assert not any((home / "staging").iterdir())  # the work folders are removed
    assert _children() <= before  # the LocalClusters' scheduler, nanny and worker processes are gone
