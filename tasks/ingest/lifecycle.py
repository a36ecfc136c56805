"""One file lifecycle for every dataset: hash -> already ingested? -> landed (tasks/ingest/landing.py, before the
transaction) -> read -> stage -> validate -> split good / quarantined -> store -> register, all inside ONE
transaction (a file is stored whole or not at all).

Two placements of the same steps: `ingest_file` runs them all on the writer's connection (the default);
for parallel ingest, `stage_file` reads, stages and validates one file with no warehouse connection (its own
in-memory DuckDB, so a Dask worker on another process or host can run it) and leaves Parquet files in a work
folder, and `apply_staged` - the one writer - loads them in the file's transaction and does the rest: the
part that depends on the warehouse's current rows (`Dataset.stage_against_warehouse`, the expectations on
`Dataset.history_columns`), the registry check, store, quarantine and registration. The writer applies
files in the order given, so the warehouse ends up as after the sequential run.

A dataset (prices, telemetry, ...) supplies only what differs, as a `Dataset`: how its file is read into
`staging_file_records`, how the records become `staging_file_rows` (the rows the suite validates: a row key
`_row_id`, `source_line`, `raw_values` and the suite's columns), which suite and thresholds validate them,
how its own rejections combine with the suite's, and how accepted rows are stored. The lifecycle owns the
rest, once: the file registry, the transient-I/O rule, whole-file quarantine, row quarantine, DuckDB's
memory cap, and the outcome.

The transient-I/O rule: an OSError that may pass (EIO, ETIMEDOUT, ...; see registry.is_transient) is
raised to the caller (the flow's task retries it); a file still unreadable after the retries is quarantined
for tonight WITHOUT being registered (`quarantine_unreadable`), so the next run reads it again. Any other
failure to read or stage quarantines the file whole and registers it (the same bytes are not read again).

The machine's failures are not the file's: a full disk, no memory, a storage error (registry.machine_failure),
met anywhere in a file's lifecycle, roll its transaction back and raise registry.IngestAborted naming the file,
which stays unregistered (the next run reads it again); only the file's content quarantines it.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from tasks.ingest.config import IngestLimits
from tasks.ingest.landing import Part, discard, land_file, land_part, read_into_part
from tasks.ingest.quarantine import count_by_reason, quarantine_file, quarantine_staged_rows
from tasks.ingest.registry import (
    FileOutcome,
    IngestAborted,
    aborted,
    already_ingested,
    content_sha256,
    irregular_file,
    is_transient,
    machine_failure,
    record_file,
)
from tasks.ingest.source import FileSource
from tasks.ingest.validation import check_staged, collect_suite_failures
from tasks.landing_zone import landing_dir
from tasks.reference import load_reference_tables
from tasks.warehouse import execute, ingest_limits, migrate, query, transaction

# The staged tables a worker hands to the writer, one Parquet file each.
HANDED_OVER = ("file_records", "file_rows", "suite_check_rows")
# Rows per Parquet row group of a handed-over table: DuckDB's writer holds a row group per thread in memory
# that it cannot spill (its default, 122,880 rows of SkyPilot offers with their JSON, is ~64 MB per thread).
HAND_OVER_ROW_GROUP = 20_000


class FileError(ValueError):
    """The file as a whole cannot be ingested (quarantined whole, with this message)."""


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
    """What one dataset supplies to the lifecycle. `read_and_stage` writes only `staging_*` (it reads the
    reference tables, and prices read core.price_observations for the price move against history);
    `store` is the only part that writes core tables. To read and stage files in parallel, run
    `read_and_stage` (and validation) on a worker's own DuckDB with the reference tables loaded, hand the
    staging tables over as Parquet, and let the one writer run `stage_against_warehouse`, `combine_failures`,
    `store` and the registration in the file's transaction (`stage_file` / `apply_staged`)."""

    name: str    # raw.ingested_files.dataset / quarantine dataset
    suite: str   # expectations/<suite>.json
    # staged columns computed from the warehouse's current rows by `stage_against_warehouse` (the writer's
    # part); the suite's expectations on them are checked there, every other one where the file is staged
    history_columns: frozenset[str] = frozenset()

    def describe(self, source: FileSource, outcome: FileOutcome) -> None:  # noqa: B027 - optional hook
        """Fill the outcome's descriptive fields (provider, format) before anything is read."""

    @abstractmethod
    def validation_parameters(self) -> dict[str, Any]:
        """The suite's `$PARAMETER` values (thresholds from config)."""

    @abstractmethod
    def read_and_stage(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> Staged:
        """Read the file and create `staging_file_records` (every record as read: _row_id, source_line,
        raw_values as JSON text or a STRUCT, cast to JSON where a rejected row is quarantined; a table, or a view
        over the file as read that computes them where they are read) and
        `staging_file_rows` (_row_id, the record's row key; source_line, rejected_reason, the suite's columns
        and what `store` needs; the wide raw record stays in file_records, joined only where it is stored).
        Raise FileError for a file that cannot be ingested."""

    def stage_against_warehouse(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> None:  # noqa: B027
        """Add `history_columns` to `staging_file_rows` from the warehouse's current rows (e.g. the price move
        against stored observations). Runs on the writer's connection, in the file's transaction."""

    def is_file_column(self, column: str) -> bool:
        """True for a column the file alone decides (checked where the file is staged)."""
        return column not in self.history_columns

    def is_history_column(self, column: str) -> bool:
        return column in self.history_columns

    @abstractmethod
    def file_error(self, file: FileContext, error: BaseException) -> str:
        """The whole-file quarantine message for an unexpected error while reading or staging."""

    @abstractmethod
    def combine_failures(self, con: duckdb.DuckDBPyConnection) -> None:
        """`staging_file_failures` (_row_id, failed_check) from the dataset's own rejections in
        `staging_file_rows` and the suite's in `staging_suite_failures`."""

    @abstractmethod
    def store(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> list[str]:
        """Store the accepted rows (staging_file_rows without staging_file_failures) as typed rows carrying
        (content_sha256, source_line) back to the landed file. Returns notes for the outcome."""

    def rejection_notes(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        """Notes a person should hear about the rejected rows (e.g. unknown GPU names)."""
        return []


def ingest_file(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, source: FileSource, ingested_at: datetime, limits: IngestLimits
) -> FileOutcome:
    """The lifecycle of one file (see the module docstring), within `limits` (config/settings.toml [ingest]).
    Raises OSError only for a transient I/O error."""
    path = Path(source.path)
    outcome = FileOutcome(dataset.name, str(path), "", "loaded")
    dataset.describe(source, outcome)
    irregular = irregular_file(path)
    if irregular is not None:  # never read (it could be read forever), never registered
        return _quarantine_whole_file(con, dataset, outcome, irregular, ingested_at, None)
    folder = landing_dir(con)
    part = None
    try:
        if folder is None:  # an in-memory warehouse: nothing lands
            sha = content_sha256(path)
        else:  # one read: the hash, and the bytes to land once the registry says they are new
            part = read_into_part(path, folder)
            sha = part.sha256
        size_bytes = path.stat().st_size
    except OSError as error:
        discard(part)
        failure = machine_failure(error)
        if failure is not None:
            raise aborted(path, failure) from error
        if is_transient(error):
            raise  # retried by the flow's task; still failing: quarantine_unreadable
        return _quarantine_whole_file(con, dataset, outcome, _unreadable(path, error), ingested_at, None)
    outcome.content_sha256 = sha
    if already_ingested(con, dataset.name, sha):
        discard(part)
        outcome.status = "already_ingested"
        return outcome
    if part is not None and folder is not None:
        problem = _land_part(path, part, folder, outcome)
        if problem is not None:
            return _quarantine_whole_file(con, dataset, outcome, problem, ingested_at, None)

    return ingest_unit(con, dataset, FileContext(source, sha, ingested_at), outcome, size_bytes, limits)


def _land_part(path: Path, part: Part, folder: Path, outcome: FileOutcome) -> str | None:
    """`land` for a file already read into a part file."""
    try:
        outcome.landed_path = land_part(part, folder).landed_path
    except OSError as error:
        return _landing_failed(path, error)
    return None


def land(con: duckdb.DuckDBPyConnection, path: Path, outcome: FileOutcome) -> str | None:
    """Land the file's bytes beside the warehouse (tasks/ingest/landing.py) before its transaction; sets
    `outcome.landed_path`. Returns why the file cannot be read (quarantined for tonight, not registered), or
    None. A transient I/O error is raised (the task retries it), the machine's failure raises IngestAborted."""
    folder = landing_dir(con)
    if folder is None:  # an in-memory warehouse: nothing lands
        return None
    try:
        outcome.landed_path = land_file(path, folder, outcome.content_sha256).landed_path
    except OSError as error:
        return _landing_failed(path, error)
    except ValueError as error:  # the bytes changed since they were hashed
        return str(error)
    return None


def ingest_unit(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, file: FileContext, outcome: FileOutcome, size_bytes: int,
    limits: IngestLimits,
) -> FileOutcome:
    """Read, stage, validate, store and register one unit (a file, or e.g. one MLflow run, whose
    `content_sha256` and `source_file` name it) in one transaction on the writer's connection. The caller
    has checked the registry."""
    try:
        with ingest_limits(con, limits.memory_limit, limits.spill):
            con.execute("begin transaction")
            try:
                try:
                    staged = dataset.read_and_stage(con, file)
                except Exception as error:  # a read failure quarantines the file, the night goes on
                    raise_unless_content(error, file.source.path)
                    con.execute("rollback")
                    return _quarantine_whole_file(con, dataset, outcome, _read_error(dataset, file, error),
                                                  file.ingested_at, size_bytes)
                dataset.stage_against_warehouse(con, file)
                check_staged(con, dataset.suite, dataset.validation_parameters())  # the whole suite in one pass
                _finish(con, dataset, file, outcome, staged, size_bytes)
                con.execute("commit")
            except BaseException:
                _rollback(con)
                raise
    except BaseException as error:  # the limits restored or not (a full disk may fail that too)
        failure = None if isinstance(error, IngestAborted) else machine_failure(error)
        if failure is not None:
            raise aborted(file.source.path, failure) from error
        raise
    return outcome


def raise_unless_content(error: BaseException, path: Path | str) -> None:
    """Return only when `error` is about the file's content (the file is then quarantined): the machine's
    failures raise IngestAborted, a transient I/O error is raised as is (the task retries it)."""
    failure = machine_failure(error)
    if failure is not None:
        raise aborted(path, failure) from error
    if is_transient(error):
        raise error


def _landing_failed(path: Path, error: OSError) -> str:
    """Why a file that could not land is quarantined tonight; the machine's failure raises IngestAborted and a
    transient I/O error is raised again (the task retries it)."""
    failure = machine_failure(error)
    if failure is not None:
        raise aborted(path, failure) from error
    if is_transient(error):
        raise error
    return _unreadable(path, error)


def _unreadable(path: Path, error: OSError) -> str:
    problem = "file not found" if isinstance(error, FileNotFoundError) else describe_error(error)
    return f"{path.name}: {problem} ({path})"


def _read_error(dataset: Dataset, file: FileContext, error: BaseException) -> str:
    return str(error) if isinstance(error, FileError) else dataset.file_error(file, error)


def _finish(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, file: FileContext, outcome: FileOutcome, staged: Staged,
    size_bytes: int,
) -> None:
    """The staged file, checked, stored: failures combined, counted, accepted rows stored, rejected rows
    quarantined, staging dropped, the file registered (inside the caller's transaction, inside `ingest_limits`,
    which restores the row order freed here)."""
    # Stored rows carry no order (every reader orders what it shows): freed, DuckDB writes them on every thread
    # instead of one (10^6 telemetry rows: raw records 3.1 -> 2.2 s, runs 2.6 -> 1.3 s)
    execute(con, "common/set_insertion_order", {"preserve": False})
    collect_suite_failures(con)
    dataset.combine_failures(con)
    _count(con, outcome, staged)
    outcome.notes += dataset.rejection_notes(con)
    outcome.notes += dataset.store(con, file)
    quarantine_staged_rows(con, dataset.name, file.source_file, file.sha256, file.ingested_at)
    drop_staging(con)
    record_file(con, outcome, size_bytes, file.ingested_at)


def drop_staging(con: duckdb.DuckDBPyConnection) -> None:
    """Drop what staging made: staging_file_records and staging_file_rows first, as the table or view the dataset
    made each (a view reads staged tables dropped after it), then every other staged table and view."""
    if query(con, "ingest/staging_is_a_view", {"name": "staging_file_records"}).fetchall()[0][0]:
        execute(con, "ingest/drop_staging_records_view")
    else:
        execute(con, "ingest/drop_staging_records_table")
    if query(con, "ingest/staging_is_a_view", {"name": "staging_file_rows"}).fetchall()[0][0]:
        execute(con, "ingest/drop_staging_rows_view")
    execute(con, "ingest/drop_staging")


@dataclass(frozen=True)
class StageJob:
    """One file to stage away from the warehouse, with everything the worker needs (picklable: no
    connection, no configuration read on the worker)."""

    dataset: Dataset
    source: FileSource
    ingested_at: datetime
    workdir: Path                    # the staged artefact goes to a new folder under it
    known: frozenset[str]            # content hashes registered before the batch: not staged again
    parameters: dict[str, Any]       # the suite's $PARAMETER values
    memory_limit: str                # DuckDB's cap on the worker (config/settings.toml [ingest])
    reference: dict[str, Path]       # gpu_specs / gpu_aliases files (core.gpu_specs for the staging SQL)


@dataclass(frozen=True)
class StagedFile:
    """What a worker hands to the writer for one file: its identity, and either the staged tables (Parquet
    files in `directory`) with what reading found, or the whole-file quarantine message."""

    source: FileSource
    sha256: str | None = None        # None: the file could not be read at all (not registered)
    size_bytes: int | None = None
    staged: Staged | None = None
    error: str | None = None         # the file is quarantined whole with this message
    directory: Path | None = None    # HANDED_OVER tables as <name>.parquet


def stage_file(job: StageJob) -> StagedFile:
    """Read, stage and validate one file with no warehouse connection: the steps `ingest_unit` runs before
    `stage_against_warehouse`, on a private in-memory DuckDB, leaving the staged tables as Parquet.
    Raises OSError only for a transient I/O error (the task retries it)."""
    path = Path(job.source.path)
    irregular = irregular_file(path)
    if irregular is not None:  # never read (it could be read forever), never registered
        return StagedFile(job.source, error=irregular)
    try:
        sha, size_bytes = content_sha256(path), path.stat().st_size
    except OSError as error:
        if is_transient(error):
            raise
        return StagedFile(job.source, error=_unreadable(path, error))
    if sha in job.known:
        return StagedFile(job.source, sha, size_bytes)  # the writer reports it already ingested
    dataset, file = job.dataset, FileContext(job.source, sha, job.ingested_at)
    directory = job.workdir / f"{sha[:16]}-{uuid.uuid4().hex[:8]}"
    directory.mkdir(parents=True)
    try:
        with duckdb.connect() as con:
            migrate(con)  # the staging schema, the SQL macros and core.gpu_specs' shape
            load_reference_tables(con, job.reference)
            with ingest_limits(con, memory_limit=job.memory_limit, spill=directory / "spill"):
                try:
                    staged = dataset.read_and_stage(con, file)
                except Exception as error:  # the file is quarantined whole by the writer
                    raise_unless_content(error, path)
                    shutil.rmtree(directory, ignore_errors=True)
                    return StagedFile(job.source, sha, size_bytes, error=_read_error(dataset, file, error))
                check_staged(con, dataset.suite, job.parameters, dataset.is_file_column)
                execute(con, "ingest/create_check_rows")
                # the handed-over rows carry their row keys: their order is free (kept, DuckDB buffers a view's
                # rows, e.g. 1.9 M SkyPilot offers with their JSON, past the worker's memory cap)
                execute(con, "common/set_insertion_order", {"preserve": False})
                for name in HANDED_OVER:
                    con.table(f"staging_{name}").write_parquet(
                        str(directory / f"{name}.parquet"), row_group_size=HAND_OVER_ROW_GROUP)
    except BaseException as error:
        shutil.rmtree(directory, ignore_errors=True)
        failure = None if isinstance(error, IngestAborted) else machine_failure(error)
        if failure is not None:
            raise aborted(path, failure) from error
        raise
    shutil.rmtree(directory / "spill", ignore_errors=True)
    return StagedFile(job.source, sha, size_bytes, staged=staged, directory=directory)


def apply_staged(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, staged_file: StagedFile, ingested_at: datetime,
    limits: IngestLimits,
) -> FileOutcome:
    """The writer's part for a file `stage_file` staged: registry check, then in ONE transaction load the
    staged tables, add and check the warehouse-dependent columns, store, quarantine, register. The same
    outcome and rows as `ingest_file` on the same file at the same point of the sequence."""
    source = staged_file.source
    outcome = FileOutcome(dataset.name, str(Path(source.path)), "", "loaded")
    dataset.describe(source, outcome)
    try:
        if staged_file.sha256 is None:  # unreadable (e.g. not found): quarantined, not registered
            return _quarantine_whole_file(con, dataset, outcome, str(staged_file.error), ingested_at, None)
        outcome.content_sha256 = staged_file.sha256
        if already_ingested(con, dataset.name, staged_file.sha256):
            outcome.status = "already_ingested"
            return outcome
        problem = land(con, Path(source.path), outcome)
        if problem is not None:
            return _quarantine_whole_file(con, dataset, outcome, problem, ingested_at, None)
        if staged_file.error is not None or staged_file.staged is None or staged_file.directory is None:
            message = staged_file.error or f"{Path(source.path).name}: staged by a worker that skipped it"
            return _quarantine_whole_file(con, dataset, outcome, message, ingested_at, staged_file.size_bytes)
        file = FileContext(source, staged_file.sha256, ingested_at)
        try:
            with ingest_limits(con, limits.memory_limit, limits.spill), transaction(con):
                for name in HANDED_OVER:
                    con.read_parquet(str(staged_file.directory / f"{name}.parquet")).create_view(
                        f"handed_over_{name}", replace=True)
                execute(con, "ingest/load_handed_over")
                dataset.stage_against_warehouse(con, file)
                check_staged(con, dataset.suite, dataset.validation_parameters(), dataset.is_history_column)
                _finish(con, dataset, file, outcome, staged_file.staged, int(staged_file.size_bytes or 0))
        except Exception as error:
            failure = machine_failure(error)
            if failure is not None:
                raise aborted(source.path, failure) from error
            raise
        return outcome
    finally:
        if staged_file.directory is not None:
            shutil.rmtree(staged_file.directory, ignore_errors=True)


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    # already rolled back (the quarantine path) or the connection is gone
    with contextlib.suppress(duckdb.Error):
        con.execute("rollback")


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



def stage_jobs(
    con: duckdb.DuckDBPyConnection,
    dataset: Dataset,
    sources: list[FileSource],
    ingested_at: datetime,
    workdir: Path,
    reference: dict[str, Path],
    memory_limit: str,
) -> list[StageJob]:
    """One StageJob per file, with the hashes already registered (a re-run stages nothing it would skip)."""
    known = frozenset(sha for (sha,) in execute(con, "ingest/registered_hashes", {"dataset": dataset.name}).fetchall())
    parameters = dataset.validation_parameters()
    return [
        StageJob(dataset, source, ingested_at, workdir, known, parameters, memory_limit, reference)
        for source in sources
    ]
