"""Telemetry through the one ingest lifecycle (tasks/ingest/lifecycle.py): the `telemetry` Dataset is the
reader (CSV, JSON Lines, Parquet), the normalisation to the contract, the staging SQL (GPU peaks and the
checked columns: sql/telemetry/stage_runs.sql), the `telemetry` suite, the rule for duplicate run_ids in
one file, and the store SQL (one current record per run_id, older records kept in history).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from tasks.contract.normalise import as_arrow, normalised_records
from tasks.contract.schema import INPUT_KINDS, TelemetryValidation
from tasks.ingest.config import IngestLimits
from tasks.ingest.lifecycle import (
    Dataset,
    FileContext,
    FileError,
    Staged,
    Unit,
    apply,
    describe_error,
    ingest_file,
)
from tasks.ingest.lifecycle import quarantine_unreadable as _quarantine_unreadable
from tasks.ingest.registry import FileOutcome, is_transient
from tasks.ingest.source import FileSource
from tasks.ingest.validation import ROW_KEY
from tasks.telemetry.readers import (
    RAW_VALUES,
    SOURCE_LINE,
    TelemetryFileError,
    file_format,
    read_into_duckdb,
    read_telemetry,
)
from tasks.warehouse import execute, query, registered

DATASET = "telemetry"
IDENTICAL_DUPLICATE = "identical duplicate of an earlier row with the same run_id in this file (kept the first)"


def telemetry_dataset(
    aliases: pl.DataFrame,
    vocabulary: dict[str, dict[str, Any]],
    validation: TelemetryValidation,
    records: pl.DataFrame | None = None,
) -> Dataset:
    """The `telemetry` dataset: `vocabulary` and `validation` from config/telemetry.toml; `records`: rows a
    reader already produced (e.g. an MLflow run), read instead of a file."""
    runs = TelemetryRuns(aliases, vocabulary, validation, records)
    return Dataset(name=DATASET, suite="telemetry", parameters=validation.model_dump(), stage=runs.read_and_stage,
                   failures="telemetry/combine_failures", store=runs.store, notes=runs.rejection_notes,
                   read_error="unreadable file: {error}")


def telemetry_source(path: Path) -> FileSource:
    """A telemetry file to ingest, with its format (csv, jsonl, parquet; None when the name says none: reading
    says why)."""
    try:
        return FileSource(Path(path), format=file_format(Path(path)))
    except TelemetryFileError:
        return FileSource(Path(path))


class TelemetryRuns:
    """What reading, normalising and storing telemetry needs: the GPU aliases, the vocabulary of spellings, the
    thresholds, and the records when a reader already produced them."""

    def __init__(
        self,
        aliases: pl.DataFrame,
        vocabulary: dict[str, dict[str, Any]],
        validation: TelemetryValidation,
        records: pl.DataFrame | None = None,
    ) -> None:
        self.aliases = aliases
        self.validation = validation  # config/telemetry.toml [validation]
        self.vocabulary = vocabulary
        self.records = records  # rows a reader already produced (e.g. MLflow runs): no file to read

    def read_and_stage(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> Staged:
        path = Path(file.source.path)
        try:
            if self.records is not None:
                with registered(con, "read_records", as_arrow(self.records.with_row_index(ROW_KEY))):
                    execute(con, "telemetry/stage_polars_records")
            elif not self._read_with_duckdb(con, path):
                # the general readers (quotes, blank lines, JSON Lines, nested Parquet values, errors named)
                records = read_telemetry(path).with_row_index(ROW_KEY)
                # the record whole is in its raw JSON: only the contract's columns go on (a file of 10^4 extra
                # columns would need a DuckDB vector per column, over the ingest memory cap)
                records = records.select(ROW_KEY, SOURCE_LINE, RAW_VALUES,
                                         *[c for c in records.columns if c in INPUT_KINDS])
                with registered(con, "read_records", as_arrow(records)):
                    execute(con, "telemetry/stage_polars_records")
                del records
        except TelemetryFileError as error:
            raise FileError(error.args[0]) from error
        try:
            rows = self._normalise(con, file)
        except Exception as error:  # a value nothing expected: this file is quarantined
            if is_transient(error):
                raise
            raise FileError(f"cannot normalise: {describe_error(error)}") from error
        identical = query(con, "telemetry/count_identical_duplicates").fetchall()[0][0]
        execute(con, "telemetry/drop_staged_records")
        skipped = {IDENTICAL_DUPLICATE: identical} if identical else {}
        return Staged(rows_read=rows, skipped_by_reason=skipped)

    def _normalise(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> int:
        """staging_file_records -> staging_file_rows: the contract's normaliser (tasks/contract/normalise.py), then
        stage_runs.sql and duplicate_runs.sql, the rows stored once. Returns the records read."""
        with normalised_records(con, self.aliases, self.vocabulary) as rows:
            execute(con, "telemetry/stage_runs", {"ingested_at": file.ingested_at})
            execute(con, "telemetry/drop_normalised_runs")
        execute(con, "telemetry/duplicate_runs")
        return rows

    @staticmethod
    def _read_with_duckdb(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
        """read_into_duckdb. It raises only when its failure aborted the file's transaction (nothing else can
        run in it): then the general reader names the file's fault if it finds one (a line of 10^5 fields),
        else DuckDB's own error (e.g. out of memory) is what the file is quarantined with."""
        try:
            return read_into_duckdb(con, path)
        except duckdb.Error as error:
            failed = error
        try:
            read_telemetry(path)
        except TelemetryFileError as fault:
            raise fault from None  # the file's own fault, whatever DuckDB ran short of on the way
        raise failed

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
        execute(con, "telemetry/classify_runs")
        execute(con, "telemetry/stored_run_rows")
        identity = {"source_file": file.source_file, "sha": file.sha256, "ingested_at": file.ingested_at}
        execute(con, "telemetry/archive_replaced_runs", {"superseded_at": file.ingested_at, "sha": file.sha256})
        execute(con, "telemetry/archive_older_records", {**identity, "superseded_at": file.ingested_at})
        execute(con, "telemetry/delete_replaced_runs")
        execute(con, "telemetry/insert_runs", identity)
        counts = dict(query(con, "common/count_by_value",
                            {"table": "temp.classified_runs", "column": "action"}).fetchall())
        execute(con, "telemetry/drop_classified_runs")
        execute(con, "telemetry/drop_stored_run_rows")
        return [
            "runs: {new} new, {newer} replaced (older record kept in history), {unchanged} unchanged, "
            "{older} older than the current record (kept in history)".format(
                **{k: counts.get(k, 0) for k in ("new", "newer", "unchanged", "older")}
            )
        ]


_UNPARSED_CHECKPOINTING = re.compile(r"""activation_checkpointing=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def unknown_spellings(rejected: pl.DataFrame) -> list[str]:
    """Spellings the vocabulary does not know, with their row counts, for the ingest summary:
    ["precision 'int3' x 2", ...] (what to add to config/telemetry.toml). `rejected` are staged rows
    (sql/telemetry/stage_runs.sql columns unknown_precision / unknown_workload, and unparsed_fields)."""
    found: dict[tuple[str, str], int] = {}
    for column, field in (("unknown_precision", "precision"), ("unknown_workload", "workload")):
        if column in rejected.columns:
            for value in rejected[column].drop_nulls().to_list():
                found[(field, repr(value))] = found.get((field, repr(value)), 0) + 1
    if "unparsed_fields" in rejected.columns:
        for text in rejected["unparsed_fields"].drop_nulls().to_list():
            for value in _UNPARSED_CHECKPOINTING.findall(text):
                key = ("activation_checkpointing", value)
                found[key] = found.get(key, 0) + 1
    return [f"{field} {value} × {count}" for (field, value), count in sorted(found.items())]


def ingest_telemetry_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    aliases: pl.DataFrame,
    ingested_at: datetime,
    *,
    vocabulary: dict[str, dict[str, Any]],
    validation: TelemetryValidation,
    limits: IngestLimits,
) -> FileOutcome:
    """One telemetry file through the lifecycle (the public entry point for one file)."""
    dataset = telemetry_dataset(aliases, vocabulary, validation)
    return ingest_file(con, dataset, telemetry_source(path), ingested_at, limits)


def ingest_telemetry_records(
    con: duckdb.DuckDBPyConnection,
    records: pl.DataFrame,
    outcome: FileOutcome,
    size_bytes: int,
    aliases: pl.DataFrame,
    ingested_at: datetime,
    *,
    vocabulary: dict[str, dict[str, Any]],
    validation: TelemetryValidation,
    limits: IngestLimits,
) -> FileOutcome:
    """Records a reader already produced (contract columns as text + SOURCE_LINE + RAW_VALUES; e.g. MLflow runs,
    tasks/telemetry/mlflow_ingest.py) through the same lifecycle, as the unit `outcome` names (its source_file,
    content_sha256 and format); returns the unit's outcome."""
    dataset = telemetry_dataset(aliases, vocabulary, validation, records)
    # the unit's records as read, one JSON object a line (source_line = line number): what lands
    text = "\n".join(records.sort(SOURCE_LINE)[RAW_VALUES].fill_null("null").to_list()) + "\n"
    unit = Unit(FileSource(Path(outcome.source_file), format=outcome.format), outcome.content_sha256, size_bytes,
                content=text.encode())
    return apply(con, dataset, unit, ingested_at, limits)


def quarantine_unreadable(
    con: duckdb.DuckDBPyConnection, path: Path, error: BaseException, ingested_at: datetime
) -> FileOutcome:
    """A telemetry file still unreadable after the task's retries (see tasks.ingest.lifecycle)."""
    return _quarantine_unreadable(con, DATASET, telemetry_source(path), error, ingested_at)
