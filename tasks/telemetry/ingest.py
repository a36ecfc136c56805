"""Telemetry through the one ingest lifecycle (tasks/ingest/lifecycle.py): what telemetry supplies is the
reader (CSV, JSON Lines, Parquet), the normalisation to the contract, the staging SQL (GPU peaks and the
checked columns: sql/telemetry/stage_runs.sql), the `telemetry` suite, the rule for duplicate run_ids in
one file, and the store SQL (one current record per run_id, older records kept in history).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from tasks.ingest.lifecycle import Dataset, FileContext, FileError, FileSource, Staged, describe_error, ingest_file
from tasks.ingest.lifecycle import quarantine_unreadable as _quarantine_unreadable
from tasks.ingest.registry import FileOutcome, is_transient
from tasks.ingest.validation import ROW_KEY
from tasks.settings import load_config
from tasks.telemetry.contract import INPUT_KINDS, NORMALISED_COLUMNS
from tasks.telemetry.normalise import load_vocabulary, normalise_runs, unknown_spellings
from tasks.telemetry.readers import RAW_VALUES, SOURCE_LINE, TelemetryFileError, file_format, read_telemetry
from tasks.warehouse import execute, query, registered

IDENTICAL_DUPLICATE = "identical duplicate of an earlier row with the same run_id in this file (kept the first)"


def as_arrow(frame: pl.DataFrame) -> pa.Table:
    """The frame as Arrow with string views, which DuckDB scans in place; a polars frame registered as is
    is converted with every string copied (about 0.5 s and 0.7 GB per 10^6 telemetry rows)."""
    return frame.to_arrow(compat_level=pl.CompatLevel.newest())


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
    """Rows sharing a run_id in one file: (conflicting -> ROW_KEY + rejected_reason, identical extras -> ROW_KEY)."""
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
            .alias("rejected_reason"),
        )
    )
    identical = (
        keyed.join(groups.filter((pl.col("versions") == 1) & (pl.col("rows") > 1)), on="run_id")
        .sort("source_line")
        .filter(pl.col("run_id").is_first_distinct().not_())
        .select(ROW_KEY)
    )
    return conflicting, identical


class TelemetryDataset(Dataset):
    name = "telemetry"
    suite = "telemetry"

    def __init__(self, aliases: pl.DataFrame, vocabulary: dict[str, dict[str, Any]] | None = None) -> None:
        self.aliases = aliases
        self.vocabulary = vocabulary or load_vocabulary()

    def describe(self, source: FileSource, outcome: FileOutcome) -> None:
        try:
            outcome.format = file_format(Path(source.path))
        except TelemetryFileError:
            outcome.format = None  # reading says why (quarantined whole)

    def validation_parameters(self) -> dict[str, Any]:
        return dict(load_config("telemetry")["validation"])

    def read_and_stage(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> Staged:
        try:
            records = read_telemetry(Path(file.source.path)).with_row_index(ROW_KEY)
        except TelemetryFileError as error:
            raise FileError(error.args[0]) from error
        with registered(con, "read_records", as_arrow(records.select(ROW_KEY, SOURCE_LINE, RAW_VALUES))):
            execute(con, "telemetry/stage_records")
        try:
            normalised, identical = self._normalise(con, records)
        except Exception as error:  # noqa: BLE001 - a value nothing expected: this file is quarantined
            if is_transient(error):
                raise
            raise FileError(f"cannot normalise: {describe_error(error)}") from error
        with registered(con, "normalised_runs", as_arrow(normalised)):
            execute(con, "telemetry/stage_runs")
        skipped = {IDENTICAL_DUPLICATE: identical} if identical else {}
        return Staged(rows_read=records.height, skipped_by_reason=skipped)

    def _normalise(self, con: duckdb.DuckDBPyConnection, records: pl.DataFrame) -> tuple[pl.DataFrame, int]:
        """Records -> normalised candidate runs (identical extra duplicates left out) with record hash, source
        line and the conflict reason of conflicting duplicates; and how many identical extras were left out."""
        contract = [c for c in records.columns if c in INPUT_KINDS]
        normalised = normalise_runs(records.select(ROW_KEY, *contract), self.aliases, self.vocabulary)
        normalised = normalised.with_columns(record_hashes(con, normalised), source_line=records[SOURCE_LINE])
        conflicting, identical = duplicate_runs(normalised)
        candidates = normalised.join(identical, on=ROW_KEY, how="anti").join(
            conflicting, on=ROW_KEY, how="left", maintain_order="left"
        )
        return candidates, identical.height

    def file_error(self, file: FileContext, error: BaseException) -> str:
        return f"unreadable file: {describe_error(error)}"

    def combine_failures(self, con: duckdb.DuckDBPyConnection) -> None:
        execute(con, "telemetry/combine_failures")

    def rejection_notes(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        notes = []
        unknown = [name for (name,) in query(con, "telemetry/unknown_gpu_names").fetchall()]
        if unknown:
            notes.append(f"unknown GPU names: {', '.join(unknown)}")
        spellings = unknown_spellings(query(con, "telemetry/rejected_spellings").pl())
        if spellings:
            notes.append(f"unknown spellings (add them to config/telemetry.toml): {'; '.join(spellings)}")
        flagged = query(con, "telemetry/quality_flags").fetchall()
        if flagged:
            notes.append("kept out of training (the source's quality_flag): " + "; ".join(
                f"{count} × {flag}" for flag, count in flagged))
        return notes

    def store(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> list[str]:
        execute(con, "telemetry/insert_raw_records", {"sha": file.sha256, "source_file": file.source_file})
        execute(con, "telemetry/classify_runs",
                {"source_file": file.source_file, "sha": file.sha256, "ingested_at": file.ingested_at})
        params = {"superseded_at": file.ingested_at}
        execute(con, "telemetry/archive_replaced_runs", params)
        execute(con, "telemetry/archive_older_records", params)
        execute(con, "telemetry/delete_replaced_runs")
        execute(con, "telemetry/insert_runs")
        counts = dict(query(con, "telemetry/count_classified_runs").fetchall())
        execute(con, "telemetry/drop_classified_runs")
        return [
            "runs: {new} new, {newer} replaced (older record kept in history), {unchanged} unchanged, "
            "{older} older than the current record (kept in history)".format(
                **{k: counts.get(k, 0) for k in ("new", "newer", "unchanged", "older")}
            )
        ]


def ingest_telemetry_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    aliases: pl.DataFrame,
    ingested_at: datetime,
    vocabulary: dict[str, dict[str, Any]] | None = None,
) -> FileOutcome:
    """One telemetry file through the lifecycle (the public entry point for one file)."""
    return ingest_file(con, TelemetryDataset(aliases, vocabulary), FileSource(Path(path)), ingested_at)


def quarantine_unreadable(
    con: duckdb.DuckDBPyConnection, path: Path, error: BaseException, ingested_at: datetime
) -> FileOutcome:
    """A telemetry file still unreadable after the task's retries (see tasks.ingest.lifecycle)."""
    dataset = TelemetryDataset(pl.DataFrame(schema={"alias": pl.String, "gpu": pl.String}), {})
    return _quarantine_unreadable(con, dataset, FileSource(Path(path)), error, ingested_at)
