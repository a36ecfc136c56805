"""One file lifecycle for every dataset: hash -> already ingested? -> read -> stage -> validate ->
split good / quarantined -> store -> register, all inside ONE transaction (a file lands whole or not at all).

A dataset (prices, telemetry, ...) supplies only what differs, as a `Dataset`: how its file is read into
`staging.file_records`, how the records become `staging.file_rows` (the rows the suite validates: a row key
`_row_id`, `source_line`, `raw_values` and the suite's columns), which suite and thresholds validate them,
how its own rejections combine with the suite's, and how accepted rows are stored. The lifecycle owns the
rest, once: the file registry, the transient-I/O rule, whole-file quarantine, row quarantine, DuckDB's
memory cap, and the outcome.

The transient-I/O rule: an OSError that may pass (EIO, ETIMEDOUT, ...; see registry.is_transient) is
raised to the caller (the flow's task retries it); a file still unreadable after the retries is quarantined
for tonight WITHOUT being registered (`quarantine_unreadable`), so the next run reads it again. Any other
failure to read or stage quarantines the file whole and registers it (the same bytes are not read again).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from tasks.ingest.quarantine import count_by_reason, quarantine_file, quarantine_staged_rows
from tasks.ingest.registry import FileOutcome, already_ingested, content_sha256, is_transient, record_file
from tasks.ingest.validation import validate_staged
from tasks.warehouse import execute, ingest_limits, query, transaction


class FileError(ValueError):
    """The file as a whole cannot be ingested (quarantined whole, with this message)."""


@dataclass(frozen=True)
class FileSource:
    """One file to ingest, and how: the dataset it belongs to, and for price lists the provider it prices,
    the adapter (format) that reads it and the adapter's options (config/sources.toml)."""

    path: Path
    provider: str | None = None
    format: str | None = None
    options: dict[str, Any] | None = None


@dataclass
class Staged:
    """What reading and staging a file found besides its rows (for the outcome and the summary)."""

    rows_read: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FileContext:
    """The identity of the file being ingested, bound into the dataset's SQL."""

    source: FileSource
    sha256: str
    ingested_at: datetime

    @property
    def source_file(self) -> str:
        return str(self.source.path)


class Dataset(ABC):
    """What one dataset supplies to the lifecycle. `read_and_stage` writes only `staging.*` (it reads the
    reference tables, and prices read core.price_observations for the price move against history);
    `store` is the only part that writes raw/core tables. To read and stage files in parallel, run
    `read_and_stage` (and validation) on a worker's own DuckDB with the reference tables loaded, hand the
    staging tables over as Parquet, and let the one writer run `combine_failures`, `store` and the
    registration in the file's transaction; the price move against history is then the writer's part."""

    name: str    # raw.ingested_files.dataset / quarantine dataset
    suite: str   # expectations/<suite>.json

    def describe(self, source: FileSource, outcome: FileOutcome) -> None:  # noqa: B027 - optional hook
        """Fill the outcome's descriptive fields (provider, format) before anything is read."""

    @abstractmethod
    def validation_parameters(self) -> dict[str, Any]:
        """The suite's `$PARAMETER` values (thresholds from config)."""

    @abstractmethod
    def read_and_stage(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> Staged:
        """Read the file and create `staging.file_records` (every record as read: _row_id, source_line,
        raw_values) and `staging.file_rows` (_row_id, the record's row key; source_line, rejected_reason, the
        suite's columns and what `store` needs; the wide raw record stays in file_records, joined only where
        it is stored). Raise FileError for a file that cannot be ingested."""

    @abstractmethod
    def file_error(self, file: FileContext, error: BaseException) -> str:
        """The whole-file quarantine message for an unexpected error while reading or staging."""

    @abstractmethod
    def combine_failures(self, con: duckdb.DuckDBPyConnection) -> None:
        """`staging.file_failures` (_row_id, failed_check) from the dataset's own rejections in
        `staging.file_rows` and the suite's in `staging.suite_failures`."""

    @abstractmethod
    def store(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> list[str]:
        """Store the raw records and the accepted rows (staging.file_rows without staging.file_failures).
        Returns notes for the outcome."""

    def rejection_notes(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        """Notes a person should hear about the rejected rows (e.g. unknown GPU names)."""
        return []


def ingest_file(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, source: FileSource, ingested_at: datetime
) -> FileOutcome:
    """The lifecycle of one file (see the module docstring). Raises OSError only for a transient I/O error."""
    path = Path(source.path)
    outcome = FileOutcome(dataset.name, str(path), "", "loaded")
    dataset.describe(source, outcome)
    try:
        sha = content_sha256(path)
        size_bytes = path.stat().st_size
    except OSError as error:
        if is_transient(error):
            raise  # retried by the flow's task; still failing: quarantine_unreadable
        problem = "file not found" if isinstance(error, FileNotFoundError) else describe_error(error)
        return _quarantine_whole_file(con, dataset, outcome, f"{path.name}: {problem} ({path})", ingested_at, None)
    outcome.content_sha256 = sha
    if already_ingested(con, dataset.name, sha):
        outcome.status = "already_ingested"
        return outcome

    return ingest_unit(con, dataset, FileContext(source, sha, ingested_at), outcome, size_bytes)


def ingest_unit(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, file: FileContext, outcome: FileOutcome, size_bytes: int
) -> FileOutcome:
    """Read, stage, validate, store and register one unit (a file, or e.g. one MLflow run, whose
    `content_sha256` and `source_file` name it) in one transaction. The caller has checked the registry."""
    sha, ingested_at = file.sha256, file.ingested_at
    with ingest_limits(con):
        con.execute("begin transaction")
        try:
            try:
                staged = dataset.read_and_stage(con, file)
            except Exception as error:  # noqa: BLE001 - any read failure quarantines the file, the night goes on
                if is_transient(error):
                    raise  # an I/O error is not the file's content: retried, never registered as quarantined
                message = str(error) if isinstance(error, FileError) else dataset.file_error(file, error)
                con.execute("rollback")
                return _quarantine_whole_file(con, dataset, outcome, message, ingested_at, size_bytes)
            validate_staged(con, dataset.suite, dataset.validation_parameters())
            dataset.combine_failures(con)
            _count(con, outcome, staged)
            outcome.notes += dataset.rejection_notes(con)
            outcome.notes += dataset.store(con, file)
            quarantine_staged_rows(con, dataset.name, file.source_file, sha, ingested_at)
            execute(con, "ingest/drop_staging")
            record_file(con, outcome, size_bytes, ingested_at)
        except BaseException:
            _rollback(con)
            raise
        con.execute("commit")
    return outcome


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("rollback")
    except duckdb.Error:
        pass  # already rolled back (the quarantine path) or the connection is gone


def _count(con: duckdb.DuckDBPyConnection, outcome: FileOutcome, staged: Staged) -> None:
    rows, failures = query(con, "ingest/count_staged").fetchall()[0]
    outcome.rows_read = staged.rows_read
    outcome.skipped_by_reason = dict(staged.skipped_by_reason)
    outcome.rows_skipped = sum(staged.skipped_by_reason.values())
    outcome.rows_loaded = rows - failures
    outcome.rows_quarantined = failures
    outcome.quarantined_by_reason = count_by_reason(con)
    outcome.notes = list(staged.notes)


def describe_error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _quarantine_whole_file(
    con: duckdb.DuckDBPyConnection,
    dataset: Dataset,
    outcome: FileOutcome,
    message: str,
    ingested_at: datetime,
    size_bytes: int | None,
) -> FileOutcome:
    """The file is quarantined with its error; registered when it was read (the same bytes are not read again)."""
    outcome.status = "quarantined"
    outcome.error = message
    with transaction(con):
        quarantine_file(con, dataset.name, outcome.source_file, outcome.content_sha256 or None, message, ingested_at)
        if size_bytes is not None:  # a file that could not even be read has no content hash to register
            record_file(con, outcome, size_bytes, ingested_at)
    return outcome


def quarantine_unreadable(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, source: FileSource, error: BaseException, ingested_at: datetime
) -> FileOutcome:
    """A file still unreadable after the task's retries: quarantined for tonight, not registered (so the
    next run reads it again)."""
    path = Path(source.path)
    outcome = FileOutcome(dataset.name, str(path), "", "quarantined")
    dataset.describe(source, outcome)
    message = f"{path.name}: I/O error after retries: {describe_error(error)} ({path})"
    return _quarantine_whole_file(con, dataset, outcome, message, ingested_at, None)

