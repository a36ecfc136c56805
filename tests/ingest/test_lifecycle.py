"""The lifecycle frees DuckDB's row order only where it stores; reads keep it (a record's line is its row's place)."""

from __future__ import annotations

import duckdb
import pytest

from tasks.ingest.landing import landed_lines
from tasks.telemetry.ingest import TelemetryRuns
from tests import configured
from tests.telemetry.helpers import SAMPLE, ingest

# The bundled telemetry sample: a header and 336 records on lines 2..337.
SAMPLE_RECORDS, FIRST_LINE, LAST_LINE = 336, 2, 337


def _order_kept(con: duckdb.DuckDBPyConnection) -> bool:
    return con.sql("select current_setting('preserve_insertion_order')").fetchall()[0][0]


def _raw_lines(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int, int]:
    """Lines of the stored and quarantined rows; each stored run's line of the landed file starts with its run_id
    (the row's place in the file is its line)."""
    rows = con.sql("select run_id, content_sha256, source_line from core.telemetry_runs").fetchall()
    for run_id, sha, line in rows:
        assert landed_lines(con, sha)[line].startswith(f"{run_id},")
    return con.sql("select count(*), count(distinct source_line), min(source_line), max(source_line) from ("
                   "select source_line from core.telemetry_runs union all "
                   "select source_line from quarantine.rejected_rows)").fetchall()[0]


def test_the_row_order_is_kept_again_after_a_stored_file(con) -> None:
    assert _order_kept(con)
    assert ingest(con, SAMPLE).status == "loaded"
    assert _order_kept(con)
    assert _raw_lines(con) == (SAMPLE_RECORDS, SAMPLE_RECORDS, FIRST_LINE, LAST_LINE)


def test_a_store_that_fails_leaves_nothing_and_the_next_read_keeps_file_order(con, monkeypatch) -> None:
    # Fault: the store fails after writing the runs, with the row order freed. The file's transaction
    # is rolled back (nothing stored) and the order is kept again, so the retried file's lines are right.
    real_store = TelemetryRuns.store

    def failing_store(self, con, file):
        real_store(self, con, file)
        raise RuntimeError("disk full while storing")

    monkeypatch.setattr(TelemetryRuns, "store", failing_store)
    with pytest.raises(RuntimeError, match="disk full"):
        ingest(con, SAMPLE)
    assert _order_kept(con)
    assert con.sql("select count(*) from quarantine.rejected_rows").fetchall()[0][0] == 0
    assert con.sql("select count(*) from core.telemetry_runs").fetchall()[0][0] == 0
    monkeypatch.setattr(TelemetryRuns, "store", real_store)
    assert ingest(con, SAMPLE).status == "loaded"
    assert _raw_lines(con) == (SAMPLE_RECORDS, SAMPLE_RECORDS, FIRST_LINE, LAST_LINE)


def test_a_worker_hands_over_a_large_catalog_within_a_small_memory_cap(tmp_path) -> None:
    # A generated SkyPilot catalog of 100,000 GPU rows (bench/generate.py, fixed seed): its records are a view
    # over the file as read, 190,502 offers with their JSON. Staged by a worker capped at 100 MB, the hand-over
    # must not hold them in memory (in file order and 122,880-row Parquet row groups it needed over 200 MB).
    from datetime import UTC, datetime

    from bench.generate import write_skypilot_prices
    from tasks.ingest.lifecycle import FileSource, StageJob, stage_unit
    from tasks.prices.ingest import price_dataset

    catalog = write_skypilot_prices(tmp_path / "vms.csv", 100_000)
    dataset = price_dataset(configured.aliases(), configured.settings().validation.prices,
                            configured.resources().reference)
    job = StageJob(dataset, FileSource(catalog, "aws", "skypilot"), datetime.now(UTC), tmp_path / "work",
                   frozenset(), "100MB", configured.reference_files())
    staged = stage_unit(job)
    assert staged.error is None and staged.staged is not None and staged.directory is not None
    assert staged.staged.rows_read == 190_502
    records = duckdb.read_parquet(str(staged.directory / "file_records.parquet"))
    assert records.aggregate("count(*), count(distinct _row_id)").fetchall() == [(190_502, 190_502)]


def test_staged_on_a_worker_or_inline_a_unit_is_applied_the_same(con, tmp_path) -> None:
    # One path: the p5 daily price history, then the SkyPilot AWS catalog (whose p5.48xlarge rows are compared with
    # that history by the writer) and the telemetry sample, staged inline in `con`, and staged by `stage_unit` on a
    # private DuckDB (the worker's part) then applied to a second warehouse: the same outcomes and rows.
    from datetime import UTC, datetime

    from tasks.ingest.lifecycle import apply, ingest_file, stage_jobs, stage_unit
    from tasks.prices.ingest import PriceSource, price_dataset
    from tasks.telemetry.ingest import telemetry_dataset, telemetry_source
    from tasks.warehouse import connect
    from tests.conftest import PRICE_SAMPLES

    at = datetime(2026, 11, 30, 2, tzinfo=UTC)
    history = PriceSource(PRICE_SAMPLES / "aws_p5.48xlarge_us-east-1_ondemand_daily_pricing_api.csv", "aws",
                          "price-history", {"region": "us-east-1"})
    catalog = PriceSource(PRICE_SAMPLES / "skypilot_v8_aws_gpu_subset.csv", "aws", "skypilot")
    batches = [(price_dataset(configured.aliases(), configured.settings().validation.prices,
                              configured.resources().reference), [history, catalog]),
               (telemetry_dataset(configured.aliases(), configured.vocabulary(),
                                  configured.telemetry_options()["validation"]),
                [telemetry_source(SAMPLE)])]

    def figures(outcomes: list, connection: duckdb.DuckDBPyConnection) -> tuple:
        rows = tuple(connection.table(table).aggregate("count(*), sum(hash(cast(columns(*) as varchar)))").fetchall()
                     for table in ("core.price_observations", "core.telemetry_runs", "quarantine.rejected_rows"))
        return [(o.status, o.rows_read, o.rows_loaded, o.rows_quarantined, o.notes) for o in outcomes], rows

    inline = [ingest_file(con, dataset, source, at, configured.limits()) for dataset, sources in batches
              for source in sources]
    worker = connect(tmp_path / "worker-staged.duckdb")
    configured.load_tables(worker)
    applied = []
    for dataset, sources in batches:
        jobs = stage_jobs(worker, dataset, sources, at, tmp_path / "work", configured.reference_files(), "200MB")
        applied += [apply(worker, dataset, stage_unit(job), at, configured.limits()) for job in jobs]
    assert [o.status for o in inline] == ["loaded", "loaded", "loaded"]
    assert figures(applied, worker) == figures(inline, con)
    worker.close()


def _three_runs_one_without_gpus(tmp_path) -> tuple[object, str]:
    """The sample's header and first three records, the second (line 3) with num_gpus emptied; its run_id."""
    import csv

    with SAMPLE.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header, records = next(reader), [next(reader) for _ in range(3)]
    records[1][header.index("num_gpus")] = ""
    path = tmp_path / "three_runs.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *records])
    return path, records[1][header.index("run_id")]


def test_the_file_as_read_is_freed_before_the_warehouse_is_written(con, monkeypatch, tmp_path) -> None:
    # Staged inline, a unit is decided in a first transaction of TEMP tables only; the file as read is dropped and
    # that transaction committed (DuckDB frees a dropped table only then) before the store's transaction begins.
    # What the store sees: no file as read, and of the records as read only the rejected one (line 3, its run_id).
    path, rejected_run = _three_runs_one_without_gpus(tmp_path)
    real_store, seen = TelemetryRuns.store, {}

    def looking_store(self, con, file):
        seen["tables"] = {name for (name,) in con.sql(
            "select table_name from duckdb_tables() where temporary").fetchall()}
        seen["records"] = con.sql("select raw_values->>'run_id' from staging_file_records").fetchall()
        return real_store(self, con, file)

    monkeypatch.setattr(TelemetryRuns, "store", looking_store)
    outcome = ingest(con, path)
    assert (outcome.status, outcome.rows_loaded, outcome.rows_quarantined) == ("loaded", 2, 1)
    assert "staging_telemetry_file" not in seen["tables"]
    assert seen["records"] == [(rejected_run,)]
    assert con.sql("select source_line, raw_values->>'run_id' from quarantine.rejected_rows").fetchall() == [
        (3, rejected_run)]
    assert con.sql("select count(*) from duckdb_tables() where temporary").fetchall()[0][0] == 0


def test_a_store_that_fails_after_the_file_is_freed_leaves_no_staged_table(con, monkeypatch, tmp_path) -> None:
    # The first transaction (TEMP tables only) committed, the second fails: nothing is stored, nothing registered,
    # no staged table is left on the connection, and the same file is ingested whole on the next try.
    path, _ = _three_runs_one_without_gpus(tmp_path)
    real_store = TelemetryRuns.store

    def failing_store(self, con, file):
        raise RuntimeError("disk full while storing")

    monkeypatch.setattr(TelemetryRuns, "store", failing_store)
    with pytest.raises(RuntimeError, match="disk full"):
        ingest(con, path)
    assert con.sql("select count(*) from duckdb_tables() where temporary").fetchall()[0][0] == 0
    assert con.sql("select count(*) from raw.ingested_files").fetchall()[0][0] == 0
    monkeypatch.setattr(TelemetryRuns, "store", real_store)
    outcome = ingest(con, path)
    assert (outcome.status, outcome.rows_loaded, outcome.rows_quarantined) == ("loaded", 2, 1)
