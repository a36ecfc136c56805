"""Telemetry through the one ingest lifecycle (tasks/ingest/lifecycle.py): the `telemetry` Dataset is the
reader (CSV, JSON Lines, Parquet), the normalisation to the contract, the staging SQL (GPU peaks and the
checked columns: sql/telemetry/stage_runs.sql), the `telemetry` suite, the rule for duplicate run_ids in
one file, and the store SQL (one current record per run_id, older records kept in history).
"""

from __future__ import annotations

import tempfile
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

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
from tasks.telemetry.config import TelemetryValidation
from tasks.telemetry.contract import INPUT_KINDS, LATE_OPTIONAL_COLUMNS, NORMALISED_COLUMNS
from tasks.telemetry.normalise import normalise_runs, unknown_spellings
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
# Records normalised at a time (polars, in memory): bounds memory whatever the file size.
CHUNK_ROWS = 25_000
# Chunks normalised at once (polars works on a 25,000-row chunk mostly on one core; two chunks use two).
NORMALISE_THREADS = 2
IDENTICAL_DUPLICATE = "identical duplicate of an earlier row with the same run_id in this file (kept the first)"


def as_arrow(frame: pl.DataFrame) -> pa.Table:
    """The frame as Arrow with string views, which DuckDB scans in place; a polars frame registered as is
    is converted with every string copied (about 0.5 s and 0.7 GB per 10^6 telemetry rows)."""
    return frame.to_arrow(compat_level=pl.CompatLevel.newest())


def record_text(normalised: pl.DataFrame) -> pl.Series:
    """A run's normalised contract values as one text; its SHA-256 (sql/telemetry/stage_runs.sql) is the
    record's hash: equal hashes = the same record, whatever the file format.

    The text is each value as polars writes it, joined by U+001F, null as U+0000 (DuckDB's sha256 of it gives
    the same hex digest as hashlib over the UTF-8 text)."""
    base = [pl.col(c).cast(pl.String).fill_null("\x00") for c in NORMALISED_COLUMNS if c not in LATE_OPTIONAL_COLUMNS]
    # a late optional column adds "\x1fname=value" only where given (older records keep their hash)
    late = [pl.when(pl.col(c).is_null()).then(pl.lit("")).otherwise(pl.lit(f"\x1f{c}=") + pl.col(c).cast(pl.String))
            for c in LATE_OPTIONAL_COLUMNS]
    return normalised.select(
        pl.concat_str([pl.concat_str(base, separator="\x1f"), *late]).alias("record_text")
    ).to_series()


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
        spill = Path(query(con, "publish/duckdb_limits").fetchall()[0][1] or tempfile.gettempdir())
        spill.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="normalised-", dir=spill) as folder:
            try:
                rows = self._normalise_in_chunks(con, Path(folder))
            except Exception as error:  # a value nothing expected: this file is quarantined
                if is_transient(error):
                    raise
                raise FileError(f"cannot normalise: {describe_error(error)}") from error
            execute(con, "telemetry/duplicate_runs")
            execute(con, "telemetry/stage_runs", {"ingested_at": file.ingested_at})
            execute(con, "telemetry/drop_normalised_runs")
        identical = query(con, "telemetry/count_identical_duplicates").fetchall()[0][0]
        execute(con, "telemetry/drop_staged_records")
        skipped = {IDENTICAL_DUPLICATE: identical} if identical else {}
        return Staged(rows_read=rows, skipped_by_reason=skipped)

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

    def _normalise_in_chunks(self, con: duckdb.DuckDBPyConnection, folder: Path) -> int:
        """staging_file_records -> the view staging_normalised_runs (contract values, record text, source
        line), CHUNK_ROWS records at a time so that memory does not grow with the file. Returns the records read.

        Each normalised chunk is handed back as a Parquet file in `folder` (in the ingest's spill folder) and the
        view reads them all: appending chunk after chunk to a table inside the file's transaction grew the
        process by about 1 KB per row outside DuckDB's memory cap (10^6 rows: 2 GB)."""
        rows, files = 0, list[str]()
        pending: deque[Future[str]] = deque()
        # one streamed query, read in batches of at most CHUNK_ROWS while NORMALISE_THREADS threads normalise the
        # batches already read (at most that many in flight: memory stays bounded); the result is closed whatever
        # happens (an open result refuses every other statement on `con`, the rollback included)
        with ThreadPoolExecutor(NORMALISE_THREADS, thread_name_prefix="normalise") as pool, \
                query(con, "telemetry/record_chunks").to_arrow_reader(CHUNK_ROWS) as batches:
            try:
                for batch in batches:
                    rows += batch.num_rows
                    path = folder / f"chunk-{len(files) + len(pending):06d}.parquet"
                    pending.append(pool.submit(self._write_normalised, pa.Table.from_batches([batch]), path))
                    while len(pending) >= NORMALISE_THREADS or (pending and pending[0].done()):
                        files.append(pending.popleft().result())
                while pending:
                    files.append(pending.popleft().result())
            finally:
                for future in pending:
                    future.cancel()
            if not files:  # no records: an empty chunk gives the view its columns
                files.append(self._write_normalised(batches.schema.empty_table(), folder / "chunk-000000.parquet"))
        con.read_parquet(files).create_view("staging_normalised_runs", replace=True)
        return rows

    def _write_normalised(self, records: pa.Table, path: Path) -> str:
        """One chunk of records normalised (polars) and written to `path` as Parquet; returns the path."""
        chunk = pl.DataFrame(pl.from_arrow(records))
        contract = [c for c in chunk.columns if c in INPUT_KINDS]
        normalised = normalise_runs(chunk.select(ROW_KEY, *contract), self.aliases, self.vocabulary)
        normalised = normalised.with_columns(record_text(normalised), source_line=chunk["source_line"])
        normalised.write_parquet(path, compression="lz4")
        return str(path)

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
