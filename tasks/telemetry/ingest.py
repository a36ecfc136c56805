"""Ingest one telemetry file: read -> raw -> normalise -> stage (peaks, SQL) -> validate (GX) -> store by run_id.

Mirrors tasks/prices/ingest.py: files are registered by content hash (the same bytes are never read
twice), a file lands in one transaction, a file that cannot be read (or that normalising fails on in a
way no rule expects) is quarantined whole with its error and the caller goes on, failing rows are
quarantined with file, line and the failed check.

Vectorised throughout (10^6 rows): frames go to DuckDB as Arrow string views (scanned in place), only
the columns a step needs travel (the raw JSON only with rejected rows), and the classified runs stay in
DuckDB as a temporary table for the statements that store them.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from tasks.files import FileOutcome, already_ingested, content_sha256, is_transient, record_file
from tasks.quarantine import count_by_reason, quarantine_file, quarantine_rows
from tasks.settings import load_config
from tasks.telemetry.contract import INPUT_KINDS, NORMALISED_COLUMNS
from tasks.telemetry.normalise import load_vocabulary, normalise_runs, unknown_spellings
from tasks.telemetry.readers import RAW_VALUES, SOURCE_LINE, TelemetryFileError, file_format, read_telemetry
from tasks.validation import ROW_KEY, find_failures
from tasks.warehouse import execute, query, registered, transaction

DATASET = "telemetry"
# what core.telemetry_runs stores from a staged run (besides source_file, content_sha256, ingested_at)
STORED_COLUMNS = (*NORMALISED_COLUMNS, "workload_name", "record_hash", "source_line")
IDENTICAL_DUPLICATE = "identical duplicate of an earlier row with the same run_id in this file (kept the first)"


def as_arrow(frame: pl.DataFrame) -> pa.Table:
    """The frame as Arrow with string views, which DuckDB scans in place; a polars frame registered as is
    is converted with every string copied (about 0.5 s and 0.7 GB per 10^6 telemetry rows)."""
    return frame.to_arrow(compat_level=pl.CompatLevel.newest())


def validation_parameters() -> dict[str, Any]:
    return dict(load_config("telemetry")["validation"])


def describe_error(error: BaseException) -> str:
    return error.args[0] if isinstance(error, TelemetryFileError) else f"{type(error).__name__}: {error}"


def record_hashes(con: duckdb.DuckDBPyConnection, normalised: pl.DataFrame) -> pl.Series:
    """SHA-256 of a run's normalised contract values: equal hashes = the same record, whatever the file format.

    The text hashed is each value as polars writes it, joined by U+001F, null as U+0000 (hashed by DuckDB:
    sql/telemetry/record_hashes.sql gives the same hex digest as hashlib over the UTF-8 text)."""
    texts = normalised.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias(ROW_KEY),
        pl.concat_str(
            [pl.col(c).cast(pl.String).fill_null("\x00") for c in NORMALISED_COLUMNS], separator="\x1f"
        ).alias("record_text"),
    )
    with registered(con, "record_texts", as_arrow(texts)):
        return query(con, "telemetry/record_hashes").pl()["record_hash"]


def duplicate_runs(staged: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows sharing a run_id in one file: (conflicting -> ROW_KEY + failed_check, identical extras -> ROW_KEY)."""
    keyed = staged.filter(pl.col("run_id").is_not_null()).select(ROW_KEY, "run_id", "record_hash", "source_line")
    groups = keyed.group_by("run_id").agg(pl.len().alias("rows"), pl.col("record_hash").n_unique().alias("versions"))
    in_conflict = keyed.join(groups.filter(pl.col("versions") > 1), on="run_id")
    lines = in_conflict.group_by("run_id").agg(
        pl.col("source_line").sort().cast(pl.String).str.join(", ").alias("lines")
    )
    conflicting = (
        in_conflict.join(lines, on="run_id")
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
    with registered(con, "normalised_runs", as_arrow(normalised)):
        checks = query(con, "telemetry/stage_runs").pl()
    return normalised.join(checks, on=ROW_KEY, how="left", maintain_order="left")


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


def _quarantine_whole_file(
    con: duckdb.DuckDBPyConnection, outcome: FileOutcome, message: str, ingested_at: datetime, size_bytes: int
) -> FileOutcome:
    """The file is quarantined with its error and registered (the same bytes are not read again)."""
    outcome.status = "quarantined"
    outcome.error = message
    with transaction(con):
        quarantine_file(con, DATASET, outcome.source_file, outcome.content_sha256, message, ingested_at)
        record_file(con, outcome, size_bytes, ingested_at)
    return outcome


def _normalise_and_stage(
    con: duckdb.DuckDBPyConnection,
    records: pl.DataFrame,
    aliases: pl.DataFrame,
    vocabulary: dict[str, dict[str, Any]] | None,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Records -> (staged candidates, conflicting duplicates with their reason, identical extra duplicates)."""
    contract = [c for c in records.columns if c in INPUT_KINDS]
    normalised = normalise_runs(records.select(ROW_KEY, *contract), aliases, vocabulary or load_vocabulary())
    normalised = normalised.with_columns(
        record_hashes(con, normalised),
        source_line=records[SOURCE_LINE],
    )
    conflicting, identical = duplicate_runs(normalised)
    candidates = normalised.join(identical, on=ROW_KEY, how="anti")
    return stage(con, candidates), conflicting, identical


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
        return _quarantine_whole_file(con, outcome, describe_error(error), ingested_at, path.stat().st_size)

    return ingest_telemetry_records(con, records, outcome, path.stat().st_size, aliases, ingested_at, vocabulary)


def ingest_telemetry_records(
    con: duckdb.DuckDBPyConnection,
    records: pl.DataFrame,
    outcome: FileOutcome,
    size_bytes: int,
    aliases: pl.DataFrame,
    ingested_at: datetime,
    vocabulary: dict[str, dict[str, Any]] | None = None,
) -> FileOutcome:
    """Records as a reader gives them (contract columns as text + SOURCE_LINE + RAW_VALUES) -> normalised,
    validated, stored by run_id in one transaction, registered under `outcome` (its source_file and
    content_sha256 name the unit: a file, or one MLflow run).

    The seam every telemetry source goes through: files (ingest_telemetry_file) and MLflow runs
    (tasks/telemetry/mlflow_ingest.py) differ only in how they produce `records`."""
    sha = outcome.content_sha256
    records = records.with_row_index(ROW_KEY)
    try:
        staged, conflicting, identical = _normalise_and_stage(con, records, aliases, vocabulary)
    except Exception as error:  # noqa: BLE001 - a value nothing expected: this file is quarantined, the run goes on
        if is_transient(error):
            raise
        message = f"cannot normalise: {describe_error(error)}"
        return _quarantine_whole_file(con, outcome, message, ingested_at, size_bytes)
    records = records.select(ROW_KEY, SOURCE_LINE, RAW_VALUES)  # the parsed columns are done with
    failures = pl.concat([conflicting, find_failures(staged, DATASET, ROW_KEY, validation_parameters())])
    failures = failures.group_by(ROW_KEY, maintain_order=True).agg(pl.col("failed_check").str.join("; "))
    # the raw record travels only with the rows that need it (the rejected ones): at 10^6 rows it is the bulk
    raw = records.select(ROW_KEY, pl.col(RAW_VALUES).alias("raw_values"))
    rejected = staged.join(failures, on=ROW_KEY, how="inner").join(raw, on=ROW_KEY, how="left").with_columns(
        failed_check=pl.when(pl.col("unparsed_fields").is_not_null())
        .then(pl.format("{} [{}]", "failed_check", "unparsed_fields"))
        .otherwise("failed_check"),
        source_file=pl.lit(outcome.source_file),
        content_sha256=pl.lit(sha),
    )
    # only what is stored travels on (the provenance constants are added in SQL: classify_runs.sql)
    accepted = staged.select(ROW_KEY, *STORED_COLUMNS).join(failures, on=ROW_KEY, how="anti")
    del staged

    outcome.rows_read = records.height
    outcome.rows_skipped = identical.height
    outcome.skipped_by_reason = {IDENTICAL_DUPLICATE: identical.height} if identical.height else {}
    outcome.rows_loaded = accepted.height
    outcome.rows_quarantined = rejected.height
    outcome.quarantined_by_reason = count_by_reason(rejected)
    unknown = rejected["unknown_gpu"].drop_nulls().unique().sort().to_list()
    if unknown:
        outcome.notes.append(f"unknown GPU names: {', '.join(unknown)}")
    spellings = unknown_spellings(rejected)
    if spellings:
        outcome.notes.append(f"unknown spellings (add them to config/telemetry.toml): {'; '.join(spellings)}")
    flagged = accepted.filter(pl.col("quality_flag").is_not_null())["quality_flag"].value_counts(sort=True)
    if flagged.height:
        outcome.notes.append("kept out of training (the source's quality_flag): " + "; ".join(
            f"{count} × {flag}" for flag, count in flagged.iter_rows()))

    with transaction(con):
        with registered(con, "read_records", as_arrow(records.select(SOURCE_LINE, RAW_VALUES))):
            execute(con, "telemetry/insert_raw_records", {"sha": sha, "source_file": outcome.source_file})
        with registered(con, "accepted_runs", as_arrow(accepted)):
            execute(
                con, "telemetry/classify_runs",
                {"source_file": outcome.source_file, "sha": sha, "ingested_at": ingested_at},
            )
        params = {"superseded_at": ingested_at}
        execute(con, "telemetry/archive_replaced_runs", params)
        execute(con, "telemetry/archive_older_records", params)
        execute(con, "telemetry/delete_replaced_runs")
        execute(con, "telemetry/insert_runs")
        actions = query(con, "telemetry/count_classified_runs").fetchall()
        execute(con, "telemetry/drop_classified_runs")
        quarantine_rows(con, DATASET, rejected, ingested_at)
        record_file(con, outcome, size_bytes, ingested_at)

    counts = dict(actions)
    outcome.notes.append(
        "runs: {new} new, {newer} replaced (older record kept in history), {unchanged} unchanged, "
        "{older} older than the current record (kept in history)".format(
            **{k: counts.get(k, 0) for k in ("new", "newer", "unchanged", "older")}
        )
    )
    return outcome
