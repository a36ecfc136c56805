"""Ingest one price file: adapter -> normalise -> compare with history -> validate -> store.

A file lands whole or not at all (one transaction); a file that cannot be read is quarantined as a
file and the caller goes on with the next one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from tasks.files import FileOutcome, already_ingested, content_sha256, is_transient, record_file
from tasks.prices.adapters import AdapterContext, AdapterError, conform, registry
from tasks.prices.normalise import normalise
from tasks.quarantine import count_by_reason, quarantine_file, quarantine_rows
from tasks.settings import load_config
from tasks.validation import ROW_KEY, find_failures
from tasks.warehouse import execute, query, registered, transaction

DATASET = "prices"


@dataclass(frozen=True)
class PriceSource:
    """One file to read, and how: the provider it prices and the adapter (format) that reads it."""

    path: Path
    provider: str
    format: str
    options: dict[str, Any] | None = None


def validation_parameters() -> dict[str, Any]:
    cfg = load_config("settings")["validation"]["prices"]
    return {k: v for k, v in cfg.items() if k.startswith("max_")}


def describe_error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


# What sql/prices/price_move_factor.sql reads of the staged rows.
MOVE_KEY_COLUMNS = (
    "provider", "region", "zone", "instance_type", "pricing", "observed_at", "source_line", "usd_per_hour"
)


def stage(con: duckdb.DuckDBPyConnection, staged: pl.DataFrame) -> pl.DataFrame:
    """Add the previous observation of each offer and the price move factor (SQL, against history).

    Only the key columns go through SQL; the result is joined back by row key (the raw JSON of 10^6 rows
    through the ASOF join, two joins and a sort cost ~10x the memory of the keys)."""
    with registered(con, "staged_prices", staged.select(ROW_KEY, *MOVE_KEY_COLUMNS)):
        moves = query(con, "prices/price_move_factor").pl()
    return staged.join(moves, on=ROW_KEY, how="left", maintain_order="left")


def combine_rejections(staged: pl.DataFrame, failures: pl.DataFrame) -> pl.DataFrame:
    """One `failed_check` per rejected row. The adapter's own reason, where it gave one, is the cause
    (its missing price or GPU would only repeat it as suite failures); otherwise the suite's checks."""
    reasons = staged.select(ROW_KEY, "rejected_reason").join(failures, on=ROW_KEY, how="left")
    reasons = reasons.with_columns(failed_check=pl.coalesce("rejected_reason", "failed_check"))
    return reasons.filter(pl.col("failed_check").is_not_null()).select(ROW_KEY, "failed_check")


def _quarantine_whole_file(
    con: duckdb.DuckDBPyConnection,
    outcome: FileOutcome,
    path: Path,
    message: str,
    ingested_at: datetime,
    size_bytes: int | None,
) -> FileOutcome:
    outcome.status = "quarantined"
    outcome.error = message
    with transaction(con):
        quarantine_file(con, DATASET, str(path), outcome.content_sha256 or None, message, ingested_at)
        if size_bytes is not None:  # a file that could not even be read has no content hash to register
            record_file(con, outcome, size_bytes, ingested_at)
    return outcome


def quarantine_unreadable(
    con: duckdb.DuckDBPyConnection, source: PriceSource, error: BaseException, ingested_at: datetime
) -> FileOutcome:
    """A file still unreadable after the task's retries: quarantined for tonight, not registered (so the
    next run reads it again)."""
    path = Path(source.path)
    outcome = FileOutcome(DATASET, str(path), "", "quarantined", provider=source.provider, format=source.format)
    message = f"{path.name}: I/O error after retries: {describe_error(error)} ({path})"
    return _quarantine_whole_file(con, outcome, path, message, ingested_at, None)


def ingest_price_file(
    con: duckdb.DuckDBPyConnection,
    source: PriceSource,
    aliases: pl.DataFrame,
    ingested_at: datetime,
) -> FileOutcome:
    path = Path(source.path)
    outcome = FileOutcome(
        dataset=DATASET,
        source_file=str(path),
        content_sha256="",
        status="loaded",
        provider=source.provider,
        format=source.format,
    )
    try:
        sha = content_sha256(path)
        size_bytes = path.stat().st_size
    except OSError as error:
        if is_transient(error):
            raise  # retried by the flow's task (see tasks.files.is_transient)
        problem = "file not found" if isinstance(error, FileNotFoundError) else describe_error(error)
        return _quarantine_whole_file(con, outcome, path, f"{path.name}: {problem} ({path})", ingested_at, None)
    outcome.content_sha256 = sha
    if already_ingested(con, DATASET, sha):
        outcome.status = "already_ingested"
        return outcome

    adapter = registry()[source.format]
    context = AdapterContext(provider=source.provider, ingest_time=ingested_at, options=source.options or {})
    try:
        if size_bytes == 0:
            raise AdapterError(f"{path.name}: the file is empty")
        result = adapter(path, context)
        records = conform(result.records)
        # raw_values stay out of normalise/stage/validate; row key i = record i (normalise keeps the order)
        raw = records.select("source_line", "provider", "raw_values").with_row_index(ROW_KEY)
        staged = stage(con, normalise(records.drop("raw_values"), aliases, str(path), sha, ingested_at))
        del records
    except Exception as error:  # noqa: BLE001 - any parse failure quarantines the file, the night goes on
        if is_transient(error):
            raise  # an I/O error is not the file's content: retried, never registered as quarantined
        message = str(error) if isinstance(error, AdapterError) else f"{path.name}: {describe_error(error)}"
        return _quarantine_whole_file(
            con, outcome, path, f"cannot read as {source.format}: {message}", ingested_at, size_bytes
        )

    failures = find_failures(staged, DATASET, ROW_KEY, validation_parameters())
    reasons = combine_rejections(staged, failures)
    rejected = staged.join(reasons, on=ROW_KEY, how="inner").join(
        raw.select(ROW_KEY, "raw_values"), on=ROW_KEY, how="left", maintain_order="left"
    )
    accepted = staged.join(reasons, on=ROW_KEY, how="anti")

    outcome.rows_read = staged.height
    outcome.rows_skipped = sum(result.skipped_by_reason.values())
    outcome.skipped_by_reason = dict(result.skipped_by_reason)
    outcome.rows_loaded = accepted.height
    outcome.rows_quarantined = rejected.height
    outcome.quarantined_by_reason = count_by_reason(rejected)
    outcome.notes = list(result.notes)
    unknown = rejected.filter(pl.col("gpu").is_null())["gpu_name"].unique().drop_nulls().sort().to_list()
    if unknown:
        outcome.notes.append(f"unknown GPU names: {', '.join(unknown)}")

    with transaction(con):
        with registered(con, "raw_prices", raw.drop(ROW_KEY)):
            execute(con, "prices/insert_raw_records",
                    {"format": source.format, "content_sha256": sha, "source_file": str(path)})
        with registered(con, "accepted_prices", accepted):
            execute(con, "prices/insert_observations")
        quarantine_rows(con, DATASET, rejected, ingested_at)
        record_file(con, outcome, size_bytes, ingested_at)
    return outcome
