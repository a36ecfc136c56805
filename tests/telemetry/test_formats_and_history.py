"""Same runs from CSV, JSON Lines and Parquet; keyed by run_id: re-ingest, newer records, history."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from tasks.ingest.landing import landed_lines
from tasks.warehouse import connect
from tests import configured
from tests.telemetry.helpers import SAMPLE, current_runs, ingest, rejected, sample_rows

# A slice covering the sample's quirks: llm-foundry rows (lines 2-6), Megatron 2021 rows with
# "fp16/bf16 mixed" and "full (recompute counted in TFLOPs)" (lines 227-229), "fp8 (hybrid)" (line 237),
# LoRA (line 268), OLMo-core rows without num_gpus (lines 274-275: quarantined in every format).
SLICE_LINES = [2, 3, 4, 5, 6, 227, 228, 229, 237, 268, 274, 275]
PROVENANCE = ["source_file", "source_line", "content_sha256", "ingested_at"]


def _slice() -> pl.DataFrame:
    typed = pl.read_csv(SAMPLE, infer_schema_length=None)  # typed, as a JSON or Parquet writer would have it
    return typed.with_row_index("line", offset=2).filter(pl.col("line").is_in(SLICE_LINES)).drop("line")


def _warehouse_rows(path: Path, home: Path) -> tuple[pl.DataFrame, list[str]]:
    con = connect(home / "warehouse.duckdb")
    try:
        configured.load_tables(con)
        ingest(con, path)
        return current_runs(con).drop(PROVENANCE), rejected(con)["failed_check"].to_list()
    finally:
        con.close()


def test_jsonl_and_parquet_give_the_same_warehouse_rows_as_csv(tmp_path: Path) -> None:
    csv_path, jsonl_path, parquet_path = tmp_path / "s.csv", tmp_path / "s.jsonl", tmp_path / "s.parquet"
    sliced = _slice()
    sliced.write_csv(csv_path)
    sliced.write_ndjson(jsonl_path)
    sliced.write_parquet(parquet_path)
    from_csv, csv_rejected = _warehouse_rows(csv_path, tmp_path / "csv")
    from_jsonl, jsonl_rejected = _warehouse_rows(jsonl_path, tmp_path / "jsonl")
    from_parquet, parquet_rejected = _warehouse_rows(parquet_path, tmp_path / "parquet")
    assert from_csv.height == 10  # 12 rows - the 2 OLMo rows without num_gpus
    assert from_jsonl.equals(from_csv)
    assert from_parquet.equals(from_csv)
    missing_count = "expect_column_values_to_not_be_null(num_gpus): num_gpus missing"
    assert csv_rejected == jsonl_rejected == parquet_rejected == [missing_count] * 2


def test_reingesting_changes_nothing(con, tmp_path: Path) -> None:
    first = ingest(con, SAMPLE)
    before = current_runs(con)
    again = ingest(con, SAMPLE)
    copy = tmp_path / "renamed_copy.csv"
    copy.write_bytes(SAMPLE.read_bytes())
    renamed = ingest(con, copy)
    assert first.status == "loaded"
    assert again.status == renamed.status == "already_ingested"  # same bytes, by content hash
    assert current_runs(con).equals(before)
    # one landed file: the same bytes under another name are the same unit
    assert con.sql("select count(distinct landed_path) from raw.ingested_files").fetchall()[0][0] == 1
    assert rejected(con).height == 10
    # the same records in another format are new bytes but unchanged runs: no history
    jsonl = tmp_path / "same.jsonl"
    pl.read_csv(SAMPLE, infer_schema_length=None).write_ndjson(jsonl)
    outcome = ingest(con, jsonl)
    assert outcome.notes[-1].startswith("runs: 0 new, 0 replaced")
    assert "326 unchanged" in outcome.notes[-1]
    assert current_runs(con).drop(PROVENANCE).equals(before.drop(PROVENANCE))
    assert con.sql("select count(*) from core.telemetry_run_history").fetchall()[0][0] == 0


def _record(tmp_path: Path, name: str, tokens_per_sec: str, recorded_at: str | None) -> Path:
    path = tmp_path / name
    sample_rows("llm-foundry-d8cd8403c5").with_columns(
        tokens_per_sec_per_gpu=pl.lit(tokens_per_sec), recorded_at=pl.lit(recorded_at, pl.String)
    ).write_csv(path)
    return path


def test_newer_record_replaces_older_and_history_keeps_it(con, tmp_path: Path) -> None:
    ingest(con, _record(tmp_path, "jan.csv", "1000", "2024-01-01T00:00:00Z"))
    ingest(con, _record(tmp_path, "jun.csv", "1100", "2024-06-01T00:00:00Z"))
    ingest(con, _record(tmp_path, "older.csv", "900", "2023-06-01T00:00:00Z"))  # arrives late, is older
    current = current_runs(con)
    assert current["tokens_per_sec_per_gpu"].to_list() == [1100.0]
    assert current["source_file"].to_list() == [str(tmp_path / "jun.csv")]
    history = con.sql(
        "select tokens_per_sec_per_gpu, source_file from core.telemetry_run_history order by recorded_at"
    ).fetchall()
    assert history == [(900.0, str(tmp_path / "older.csv")), (1000.0, str(tmp_path / "jan.csv"))]


def test_without_recorded_at_the_later_ingest_wins(con, tmp_path: Path) -> None:
    ingest(con, _record(tmp_path, "a.csv", "1000", None), datetime(2025, 1, 1, tzinfo=UTC))
    ingest(con, _record(tmp_path, "b.csv", "950", None), datetime(2025, 2, 1, tzinfo=UTC))
    assert current_runs(con)["tokens_per_sec_per_gpu"].to_list() == [950.0]
    superseded = con.sql("select tokens_per_sec_per_gpu, superseded_at from core.telemetry_run_history").fetchall()
    assert superseded == [(1000.0, datetime(2025, 2, 1, tzinfo=UTC))]


def test_tokens_processed_and_wall_seconds_ingest_to_tokens_per_second(con, tmp_path: Path) -> None:
    path = tmp_path / "totals.csv"
    sample_rows("llm-foundry-214423f80b").drop("tokens_per_sec_per_gpu").with_columns(
        tokens_processed=pl.lit("94464000"), wall_seconds=pl.lit("3600")
    ).write_csv(path)
    outcome = ingest(con, path)
    assert outcome.rows_loaded == 1
    # 94,464,000 tokens / 3600 s / 64 GPUs = 410 tokens/s per GPU (the published line-79 figure)
    assert current_runs(con)["tokens_per_sec_per_gpu"].to_list() == [pytest.approx(410.0)]


def test_duplicates_far_apart_in_a_file_are_found(con, tmp_path: Path) -> None:
    # The sample (336 records: 326 runs loaded, 10 quarantined) plus, at its end, an identical copy of line 2
    # and a copy of line 3 with another throughput, each 336 lines from its original. The identical copy is
    # skipped (line 2's run stays); line 3's run has conflicting values: both of its records are quarantined
    # -> 325 runs, 12 quarantined rows, 338 raw records.
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    third = lines[2].split(",")
    third[header.index("tokens_per_sec_per_gpu")] = "999"
    path = tmp_path / "chunked.csv"
    path.write_text("\n".join([*lines, lines[1], ",".join(third)]) + "\n", encoding="utf-8")
    outcome = ingest(con, path)
    assert (outcome.rows_read, outcome.rows_loaded, outcome.rows_quarantined, outcome.rows_skipped) == (
        338, 325, 12, 1)
    runs = current_runs(con)["run_id"].to_list()
    assert "llm-foundry-d8cd8403c5" in runs and "llm-foundry-850bc1a8c1" not in runs
    conflict = rejected(con).filter(pl.col("source_line").is_in([3, 339]))
    assert conflict["source_line"].to_list() == [3, 339]
    assert all("(lines 3, 339)" in reason for reason in conflict["failed_check"].to_list())
    # both conflicting lines as the file holds them, from the landed file (a header and 338 records)
    lines = landed_lines(con, outcome.content_sha256)
    assert len(lines) == 339 and lines[3].split(",")[0] == lines[339].split(",")[0]
    # the records were a view over the file as read (DuckDB's path); nothing staged outlives the ingest
    assert con.sql("select table_name from duckdb_tables() where temporary and not internal union all "
                   "select view_name from duckdb_views() where temporary and not internal").fetchall() == []
