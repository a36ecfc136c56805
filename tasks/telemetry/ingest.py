"""Ingest one telemetry file: read -> raw -> normalise -> stage (peaks, SQL) -> validate (GX) -> store by run_id.

Mirrors tasks/prices/ingest.py: files are registered by content hash (the same bytes are never read
twice), a file lands in one transaction, a file that cannot be read is quarantined whole with its
error and the caller goes on, failing rows are quarantined with file, line and the failed check.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from tasks.files import FileOutcome, already_ingested, content_sha256, is_transient, record_file
from tasks.quarantine import count_by_reason, quarantine_file, quarantine_rows
from tasks.settings import load_config
from tasks.telemetry.contract import INPUT_KINDS, NORMALISED_COLUMNS
from tasks.telemetry.normalise import load_vocabulary, normalise_runs
from tasks.telemetry.readers import RAW_VALUES, SOURCE_LINE, TelemetryFileError, file_format, read_telemetry
from tasks.validation import ROW_KEY, find_failures
from tasks.warehouse import execute, query, registered, transaction

DATASET = "telemetry"
IDENTICAL_DUPLICATE = "identical duplicate of an earlier row with the same run_id in this file (kept the first)"


def validation_parameters() -> dict[str, Any]:
    return dict(load_config("telemetry")["validation"])


def describe_error(error: BaseException) -> str:
    return error.args[0] if isinstance(error, TelemetryFileError) else f"{type(error).__name__}: {error}"


def record_hashes(normalised: pl.DataFrame) -> pl.Series:
    """SHA-256 of a run's normalised contract values: equal hashes = the same record, whatever the file format."""
    joined = normalised.select(
        pl.concat_str([pl.col(c).cast(pl.String).fill_null("\x00") for c in NORMALISED_COLUMNS], separator="\x1f")
    ).to_series()
    return pl.Series("record_hash", [hashlib.sha256(v.encode()).hexdigest() for v in joined.to_list()])


def duplicate_runs(staged: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows sharing a run_id in one file: (conflicting -> ROW_KEY + failed_check, identical extras -> ROW_KEY)."""
    keyed = staged.filter(pl.col("run_id").is_not_null()).select(ROW_KEY, "run_id", "record_hash", "source_line")
    groups = keyed.group_by("run_id").agg(
        pl.len().alias("rows"),
        pl.col("record_hash").n_unique().alias("versions"),
        pl.col("source_line").sort().cast(pl.String).str.join(", ").alias("lines"),
    )
    conflicting = (
        keyed.join(groups.filter(pl.col("versions") > 1), on="run_id")
        .select(
            ROW_KEY,
            pl.format("duplicate run_id in one file with conflicting values (lines {}): none is loaded", "lines")
            .alias("failed_check"),
        )
    )
    identical = (
        keyed.join(groups.filter((pl.col("versions") == 1) & (pl.col("rows") > 1)), on="run_id")
        .sort("source_line")
        .filter(pl.col("run_id").is_first_distinct().not_())
        .select(ROW_KEY)
    )
    return conflicting, identical


def stage(con: duckdb.DuckDBPyConnection, normalised: pl.DataFrame) -> pl.DataFrame:
    """Add the GPU's peak for the precision and the checked columns (SQL: sql/telemetry/stage_runs.sql)."""
    with registered(con, "normalised_runs", normalised):
        return query(con, "telemetry/stage_runs").pl()


def quarantine_unreadable(
    con: duckdb.DuckDBPyConnection, path: Path, error: BaseException, ingested_at: datetime
) -> FileOutcome:
    """A file still unreadable after the task's retries: quarantined for tonight, not registered (so the
    next run reads it again)."""
    message = f"I/O error after retries: {describe_error(error)}"
    outcome = FileOutcome(DATASET, str(path), "", "quarantined", error=message)
    with transaction(con):
        quarantine_file(con, DATASET, str(path), None, outcome.error or "", ingested_at)
    return outcome


def ingest_telemetry_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    aliases: pl.DataFrame,
    ingested_at: datetime,
    vocabulary: dict[str, dict[str, Any]] | None = None,
) -> FileOutcome:
    path = Path(path)
    try:
        sha = content_sha256(path)
    except OSError as error:
        if is_transient(error):
            raise  # retried by the flow's task; still failing: quarantine_unreadable
        outcome = FileOutcome(DATASET, str(path), "", "quarantined", error=describe_error(error))
        with transaction(con):
            quarantine_file(con, DATASET, str(path), None, outcome.error or "", ingested_at)
        return outcome
    outcome = FileOutcome(dataset=DATASET, source_file=str(path), content_sha256=sha, status="loaded")
    if already_ingested(con, DATASET, sha):
        outcome.status = "already_ingested"
        return outcome

    try:
        outcome.format = file_format(path)
        records = read_telemetry(path)
    except Exception as error:  # noqa: BLE001 - any read failure quarantines the file, the run goes on
        if is_transient(error):
            raise  # an I/O error is not the file's content: retried, never registered as quarantined
        outcome.status = "quarantined"
        outcome.error = describe_error(error)
        with transaction(con):
            quarantine_file(con, DATASET, str(path), sha, outcome.error, ingested_at)
            record_file(con, outcome, path.stat().st_size, ingested_at)
        return outcome

    records = records.with_row_index(ROW_KEY)
    contract = [c for c in records.columns if c in INPUT_KINDS]
    normalised = normalise_runs(records.select(ROW_KEY, *contract), aliases, vocabulary or load_vocabulary())
    normalised = normalised.with_columns(
        record_hashes(normalised),
        source_line=records[SOURCE_LINE],
        raw_values=records[RAW_VALUES],
        source_file=pl.lit(str(path)),
        content_sha256=pl.lit(sha),
        ingested_at=pl.lit(ingested_at).cast(pl.Datetime("us", "UTC")),
    )

    conflicting, identical = duplicate_runs(normalised)
    candidates = normalised.join(identical, on=ROW_KEY, how="anti")
    staged = stage(con, candidates)
    failures = pl.concat([conflicting, find_failures(staged, DATASET, ROW_KEY, validation_parameters())])
    failures = failures.group_by(ROW_KEY, maintain_order=True).agg(pl.col("failed_check").str.join("; "))
    rejected = staged.join(failures, on=ROW_KEY, how="inner").with_columns(
        failed_check=pl.when(pl.col("unparsed_fields").is_not_null())
        .then(pl.format("{} [{}]", "failed_check", "unparsed_fields"))
        .otherwise("failed_check")
    )
    accepted = staged.join(failures, on=ROW_KEY, how="anti")

    outcome.rows_read = records.height
    outcome.rows_skipped = identical.height
    outcome.skipped_by_reason = {IDENTICAL_DUPLICATE: identical.height} if identical.height else {}
    outcome.rows_loaded = accepted.height
    outcome.rows_quarantined = rejected.height
    outcome.quarantined_by_reason = count_by_reason(rejected)
    unknown = rejected["unknown_gpu"].drop_nulls().unique().sort().to_list()
    if unknown:
        outcome.notes.append(f"unknown GPU names: {', '.join(unknown)}")

    with transaction(con):
        with registered(con, "read_records", records.select(SOURCE_LINE, RAW_VALUES)):
            execute(con, "telemetry/insert_raw_records", {"sha": sha, "source_file": str(path)})
        with registered(con, "accepted_runs", accepted):
            classified = query(con, "telemetry/classify_runs").pl()
        with registered(con, "classified_runs", classified):
            params = {"superseded_at": ingested_at}
            execute(con, "telemetry/archive_replaced_runs", params)
            execute(con, "telemetry/archive_older_records", params)
            execute(con, "telemetry/delete_replaced_runs")
            execute(con, "telemetry/insert_runs")
        quarantine_rows(con, DATASET, rejected, ingested_at)
        record_file(con, outcome, path.stat().st_size, ingested_at)

    actions = classified.group_by("action").len()
    counts = dict(zip(actions["action"].to_list(), actions["len"].to_list(), strict=True))
    outcome.notes.append(
        "runs: {new} new, {newer} replaced (older record kept in history), {unchanged} unchanged, "
        "{older} older than the current record (kept in history)".format(
            **{k: counts.get(k, 0) for k in ("new", "newer", "unchanged", "older")}
        )
    )
    return outcome
