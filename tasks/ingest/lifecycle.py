"""One lifecycle for every ingested unit (a file, a fetched download, an MLflow run's record): stage, then apply.

- **stage** (`stage`): read the unit and normalise its records into the staged tables - `staging_file_records`
  (every record as read) and `staging_file_rows` (the rows the suite validates) - with the dataset's reader and
  SQL. Staging writes only TEMP `staging_*` tables and reads nothing of the warehouse but the reference tables;
  it runs on the writer's connection, inside the unit's first transaction ("inline", the sequential default: the
  staged tables are live relations there, nothing is copied), or on a worker's own in-memory DuckDB (`stage_unit`: a
  Prefect thread or a Dask process), which checks the suite's expectations the file alone decides and hands the
  staged tables over as Parquet.
- **apply** (`apply`): the one writer. Hash and registry check (a unit already ingested is skipped), land the
  unit's bytes once under `$GPUCOST_HOME/landing/` (tasks/ingest/landing.py, before any transaction), then: the
  staged tables (staged inline now, or loaded from a worker's Parquet), the columns that depend on the
  warehouse's current rows (`Dataset.history`: e.g. the price move against stored observations), the suite's
  remaining expectations, failures combined and counted, good rows stored as typed rows carrying
  `(content_sha256, source_line)` back to the landed bytes, failing rows quarantined with their record, the unit
  registered. A unit handed over by a worker is applied in one transaction; a unit staged inline in two, the
  first writing TEMP tables only and ending once the file as read is dropped (DuckDB frees memory only at a
  transaction's end), the second writing the warehouse (`_free_file_as_read`). A unit is stored whole or not at
  all; units are applied in the order given, so the warehouse ends
  up the same wherever they were staged.

A dataset (prices, telemetry) is described by a `Dataset`: its name and suite, the suite's thresholds, its
`stage` (reader and normalising SQL), the SQL that combines its own rejections with the suite's, the SQL run
against the warehouse's rows, and its `store`. The lifecycle owns the rest, once: the registry, landing, the
transient-I/O rule, whole-file and row quarantine, DuckDB's memory cap, and the outcome.

The transient-I/O rule: an OSError that may pass (EIO, ETIMEDOUT, ...; see registry.is_transient) is raised to
the caller (the flow's task retries it); a file still unreadable after the retries is quarantined for tonight
WITHOUT being registered (`quarantine_unreadable`), so the next run reads it again. Any other failure to read or
stage quarantines the file whole and registers it (the same bytes are not read again).

The machine's failures are not the file's: a full disk, no memory, a storage error (registry.machine_failure),
met anywhere in a unit's lifecycle, roll its transaction back and raise registry.IngestAborted naming the file,
which stays unregistered (the next run reads it again); only the file's content quarantines it.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from tasks.ingest.config import IngestLimits
from tasks.ingest.landing import (
    Part,
    discard,
    land_again_if_damaged,
    land_bytes,
    land_file,
    land_part,
    owned_landing,
    read_into_part,
)
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
from tasks.reference import load_reference_tables
from tasks.warehouse import execute, ingest_limits, migrate, query, registered, transaction

# The staged tables a worker hands to the writer, one Parquet file each.
HANDED_OVER = ("file_records", "file_rows", "suite_check_rows")
# Rows per Parquet row group of a handed-over table: DuckDB's writer holds a row group per thread in memory
# that it cannot spill (its default, 122,880 rows of SkyPilot offers with their JSON, is ~64 MB per thread).
HAND_OVER_ROW_GROUP = 20_000


class FileError(ValueError):
    """The file as a whole cannot be ingested (quarantined whole, with this message)."""


@dataclass
class Staged:
    """What reading and staging a unit found besides its rows (for the outcome and the summary)."""

    rows_read: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FileContext:
    """The identity of the unit being ingested, bound into the dataset's SQL."""

    source: FileSource
    sha256: str
    ingested_at: datetime

    @property
    def source_file(self) -> str:
        return str(self.source.path)


# Reads the unit and normalises it into staging_file_records and staging_file_rows (see `Dataset.stage`).
Stage = Callable[[duckdb.DuckDBPyConnection, FileContext], Staged]
# Stores the accepted rows; returns notes for the outcome.
Store = Callable[[duckdb.DuckDBPyConnection, FileContext], list[str]]
# Notes a person should hear about the rejected rows (e.g. unknown GPU names).
Notes = Callable[[duckdb.DuckDBPyConnection], list[str]]


def no_notes(con: duckdb.DuckDBPyConnection) -> list[str]:
    return []


@dataclass(frozen=True)
class Dataset:
    """What a dataset is to the lifecycle (picklable: a worker stages with it).

    `stage` reads the unit (a price adapter or a telemetry reader: DuckDB reads the file, or Python gives the
    records as Arrow, one output schema per dataset) and runs the dataset's normalising SQL: it creates
    `staging_file_records` (_row_id, source_line, raw_values: every record as read; a table, or a view over the
    file as read) and `staging_file_rows` (_row_id, source_line, rejected_reason, the suite's columns and what
    `store` needs), writes nothing else and reads no warehouse table but the reference tables; it raises FileError
    for a unit that cannot be ingested. `history` is SQL the writer runs in the unit's transaction to add
    `history_columns` to `staging_file_rows` from the warehouse's current rows (with `history_tables`
    registered); the suite's expectations on them are checked there, every other one where the unit is staged.
    `failures` is the SQL that makes `staging_file_failures` (_row_id, failed_check) from the dataset's own
    rejections and the suite's; `store` is the only part that writes core tables."""

    name: str                      # raw.ingested_files.dataset / quarantine dataset
    suite: str                     # expectations/<suite>.json
    parameters: Mapping[str, Any]  # the suite's $PARAMETER values (thresholds from config)
    stage: Stage
    failures: str                  # sql/<failures>.sql
    store: Store
    notes: Notes = no_notes
    # the whole-file quarantine message of an unexpected error while reading or staging (`format`: the unit's
    # format, `name`: its file name, `error`: the error's type and message)
    read_error: str = "unreadable file: {error}"
    history: tuple[str, ...] = ()
    history_columns: frozenset[str] = frozenset()
    history_tables: Mapping[str, pa.Table] = field(default_factory=dict)

    def is_file_column(self, column: str) -> bool:
        """True for a column the unit alone decides (checked where the unit is staged)."""
        return column not in self.history_columns

    def is_history_column(self, column: str) -> bool:
        return column in self.history_columns


@dataclass(frozen=True)
class Unit:
    """One unit to apply: its source and, when it was staged by a worker, what the worker found.

    A file to stage inline is `Unit(source)`. A unit with no file of its own (an MLflow run's record) carries
    its `content` (the bytes that land) and its `sha256`."""

    source: FileSource
    sha256: str | None = None        # known: hashed where it was staged, or the unit's own fingerprint
    size_bytes: int | None = None
    error: str | None = None         # quarantined whole with this message (registered when sha256 is known)
    staged: Staged | None = None     # staged by a worker: its HANDED_OVER tables are Parquet in `directory`
    directory: Path | None = None
    content: bytes | None = None     # the unit's bytes, when it is not a file (landed as `.jsonl`)


def stage(con: duckdb.DuckDBPyConnection, dataset: Dataset, file: FileContext) -> Staged:
    """The unit's staged tables on `con` (see `Dataset.stage`): the same step inline and on a worker."""
    return dataset.stage(con, file)


def apply(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, unit: Unit, ingested_at: datetime, limits: IngestLimits
) -> FileOutcome:
    """The writer's part for one unit (see the module docstring), within `limits` (config/settings.toml
    [ingest]). Raises OSError only for a transient I/O error."""
    source = unit.source
    outcome = FileOutcome(dataset.name, str(Path(source.path)), "", "loaded", provider=source.provider,
                          format=source.format)
    try:
        found = _identify(con, dataset, unit, outcome, ingested_at)
        if isinstance(found, int):
            if unit.error is not None:  # staged by a worker that could not read it: quarantined whole
                found = _quarantine_whole_file(con, dataset.name, outcome, unit.error, ingested_at, found)
            else:
                file = FileContext(source, outcome.content_sha256, ingested_at)
                found = _apply_transactionally(con, dataset, unit, file, outcome, found, limits)
    except OSError:
        raise  # transient: the task applies the unit again, with its staged tables
    except BaseException:
        _discard_staged(unit)
        raise
    _discard_staged(unit)
    return found


def _discard_staged(unit: Unit) -> None:
    if unit.directory is not None:
        shutil.rmtree(unit.directory, ignore_errors=True)


def _identify(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, unit: Unit, outcome: FileOutcome, ingested_at: datetime
) -> int | FileOutcome:
    """The unit's hash, registry check and landing, before its transaction: its size in bytes, or the outcome
    when nothing more is to be done (already ingested; quarantined, not registered, as unreadable)."""
    path = Path(unit.source.path)
    if unit.sha256 is None and unit.error is not None:  # a worker could not read it: not registered
        return _quarantine_whole_file(con, dataset.name, outcome, unit.error, ingested_at, None)
    folder = owned_landing(con)  # None: an in-memory warehouse, nothing lands
    part = None
    if unit.sha256 is not None:
        sha, size_bytes = unit.sha256, int(unit.size_bytes or 0)
    else:
        irregular = irregular_file(path)
        if irregular is not None:  # never read (it could be read forever), never registered
            return _quarantine_whole_file(con, dataset.name, outcome, irregular, ingested_at, None)
        try:
            if folder is None:
                sha = content_sha256(path)
            else:  # one read: the hash, and the bytes to land once the registry says they are new
                part = read_into_part(path, folder)
                sha = part.sha256
            size_bytes = path.stat().st_size
        except OSError as error:
            discard(part)
            return _quarantine_whole_file(con, dataset.name, outcome, _landing_failed(path, error), ingested_at, None)
    outcome.content_sha256 = sha
    if already_ingested(con, dataset.name, sha):
        outcome.status = "already_ingested"
        _land_again(con, folder, unit, part, outcome)
        discard(part)
        return outcome
    if folder is not None:
        try:
            if part is not None:
                landed = land_part(part, folder)
            elif unit.content is not None:
                landed = land_bytes(unit.content, folder, sha, ".jsonl")
            else:  # hashed by a worker: read again here, and checked against that hash
                landed = land_file(path, folder, sha)
        except OSError as error:
            return _quarantine_whole_file(con, dataset.name, outcome, _landing_failed(path, error), ingested_at, None)
        except ValueError as error:  # the bytes changed since they were hashed
            return _quarantine_whole_file(con, dataset.name, outcome, str(error), ingested_at, None)
        outcome.landed_path = landed.landed_path
    return size_bytes


def _land_again(
    con: duckdb.DuckDBPyConnection, folder: Path | None, unit: Unit, part: Part | None, outcome: FileOutcome
) -> None:
    """An already ingested unit whose landed file is missing or damaged: landed again from its original bytes when
    they are at hand (a file's, not a record unit's), said in its outcome (landing.py `land_again_if_damaged`)."""
    if folder is None or unit.content is not None:
        return
    again = land_again_if_damaged(con, folder, outcome.content_sha256, Path(unit.source.path), part)
    if again is not None:
        outcome.landed_path, outcome.landed_again = again
        outcome.notes.append(f"landed again from its original bytes: {again[0]} was {again[1]}")


def _apply_transactionally(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, unit: Unit, file: FileContext, outcome: FileOutcome,
    size_bytes: int, limits: IngestLimits,
) -> FileOutcome:
    """Staged tables (inline, or a worker's Parquet), history columns, the rest of the suite, store, quarantine,
    register: one transaction, or two for a unit staged inline (`_free_file_as_read`). A unit whose content
    cannot be read is quarantined whole and registered."""
    try:
        with ingest_limits(con, limits.memory_limit, limits.spill):
            con.execute("begin transaction")
            try:
                if unit.directory is not None and unit.staged is not None:
                    staged = unit.staged
                    _load_handed_over(con, unit.directory)
                    checked: Callable[[str], bool] | None = dataset.is_history_column  # the rest: by the worker
                else:
                    try:
                        staged = stage(con, dataset, file)
                    except Exception as error:  # a read failure quarantines the file, the night goes on
                        raise_unless_content(error, file.source.path)
                        con.execute("rollback")
                        return _quarantine_whole_file(con, dataset.name, outcome, _read_error(dataset, file, error),
                                                      file.ingested_at, size_bytes)
                    checked = None  # the whole suite in one pass
                with _registered_all(con, dataset.history_tables):
                    for name in dataset.history:
                        execute(con, name)
                check_staged(con, dataset.suite, dict(dataset.parameters), checked)
                _decide(con, dataset, outcome, staged)
                if checked is None:  # staged inline: the file as read goes before the warehouse is written
                    _free_file_as_read(con)
                _store(con, dataset, file, outcome, size_bytes)
                con.execute("commit")
            except BaseException:
                _rollback(con)
                _drop_staging_after_failure(con)
                raise
    except BaseException as error:  # the limits restored or not (a full disk may fail that too)
        failure = None if isinstance(error, IngestAborted) else machine_failure(error)
        if failure is not None:
            raise aborted(file.source.path, failure) from error
        raise
    return outcome


@contextlib.contextmanager
def _registered_all(con: duckdb.DuckDBPyConnection, tables: Mapping[str, pa.Table]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for name, table in tables.items():
            stack.enter_context(registered(con, name, table))
        yield


def _load_handed_over(con: duckdb.DuckDBPyConnection, directory: Path) -> None:
    for name in HANDED_OVER:
        con.read_parquet(str(directory / f"{name}.parquet")).create_view(f"handed_over_{name}", replace=True)
    execute(con, "ingest/load_handed_over")


def raise_unless_content(error: BaseException, path: Path | str) -> None:
    """Return only when `error` is about the file's content (the file is then quarantined): the machine's
    failures raise IngestAborted, a transient I/O error is raised as is (the task retries it)."""
    failure = machine_failure(error)
    if failure is not None:
        raise aborted(path, failure) from error
    if is_transient(error):
        raise error


def _landing_failed(path: Path, error: OSError) -> str:
    """Why a file that could not be read or landed is quarantined tonight; the machine's failure raises
    IngestAborted and a transient I/O error is raised again (the task retries it)."""
    raise_unless_content(error, path)
    return _unreadable(path, error)


def _unreadable(path: Path, error: OSError) -> str:
    problem = "file not found" if isinstance(error, FileNotFoundError) else describe_error(error)
    return f"{path.name}: {problem} ({path})"


def _read_error(dataset: Dataset, file: FileContext, error: BaseException) -> str:
    if isinstance(error, FileError):
        return str(error)
    return dataset.read_error.format(format=file.source.format, name=Path(file.source.path).name,
                                     error=describe_error(error))


def _decide(con: duckdb.DuckDBPyConnection, dataset: Dataset, outcome: FileOutcome, staged: Staged) -> None:
    """The staged file, checked and decided: failures combined, counted, the notes on its rejected rows (inside the
    caller's transaction, inside `ingest_limits`, which restores the row order freed here)."""
    # Stored rows carry no order (every reader orders what it shows): freed, DuckDB writes them on every thread
    # instead of one (10^6 telemetry rows: raw records 3.1 -> 2.2 s, runs 2.6 -> 1.3 s)
    execute(con, "common/set_insertion_order", {"preserve": False})
    collect_suite_failures(con)
    execute(con, dataset.failures)
    _count(con, outcome, staged)
    outcome.notes += dataset.notes(con)


def _free_file_as_read(con: duckdb.DuckDBPyConnection) -> None:
    """Keep the rejected rows' records, drop the file as read, and commit the transaction that staged and decided
    the unit, then begin the one that writes the warehouse. DuckDB frees a dropped table's memory only when the
    transaction that dropped it ends: the file as read (10^6 rows: 300 MB) would otherwise sit beside the staged
    rows while they are stored, past the ingest's memory cap (spilled). Only TEMP tables were written so far, so
    the unit is still stored whole or not at all: a crash before the second commit leaves the warehouse as it was
    and the landed file unregistered (removed by `recover`). The history columns read in the first transaction
    are still the warehouse's: apply is the one writer."""
    execute(con, "ingest/keep_rejected_records")
    if query(con, "ingest/staging_is_a_view", {"name": "staging_file_records"}).fetchall()[0][0]:
        execute(con, "ingest/drop_staging_records_view")
    else:
        execute(con, "ingest/drop_staging_records_table")
    execute(con, "ingest/drop_file_as_read")
    execute(con, "ingest/rename_rejected_records")
    con.execute("commit")
    con.execute("begin transaction")


def _store(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, file: FileContext, outcome: FileOutcome, size_bytes: int
) -> None:
    """The decided file stored: accepted rows stored, rejected rows quarantined, staging dropped, the file
    registered (inside the caller's transaction)."""
    outcome.notes += dataset.store(con, file)
    quarantine_staged_rows(con, dataset.name, file.source_file, file.sha256, file.ingested_at)
    drop_staging(con)
    record_file(con, outcome, size_bytes, file.ingested_at)


def _drop_staging_after_failure(con: duckdb.DuckDBPyConnection) -> None:
    """After a rollback: the staged tables a committed first transaction left (`_free_file_as_read`), if any."""
    with contextlib.suppress(duckdb.Error):
        drop_staging(con)


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
    """One file to stage on a worker, with everything the worker needs (picklable: no connection, no
    configuration read on the worker)."""

    dataset: Dataset
    source: FileSource
    ingested_at: datetime
    workdir: Path                    # the staged tables go to a new folder under it
    known: frozenset[str]            # content hashes registered before the batch: not staged again
    memory_limit: str                # DuckDB's cap on the worker (config/settings.toml [ingest])
    reference: dict[str, Path]       # gpu_specs / gpu_aliases files (core.gpu_specs for the staging SQL)


def stage_unit(job: StageJob) -> Unit:
    """`stage` on a worker: a private in-memory DuckDB with the reference tables, the suite's expectations the
    file alone decides checked there, the staged tables left as Parquet for `apply`. Raises OSError only for a
    transient I/O error (the task retries it)."""
    path = Path(job.source.path)
    irregular = irregular_file(path)
    if irregular is not None:  # never read (it could be read forever), never registered
        return Unit(job.source, error=irregular)
    try:
        sha, size_bytes = content_sha256(path), path.stat().st_size
    except OSError as error:
        if is_transient(error):
            raise
        return Unit(job.source, error=_unreadable(path, error))
    if sha in job.known:
        return Unit(job.source, sha, size_bytes)  # the writer reports it already ingested
    dataset, file = job.dataset, FileContext(job.source, sha, job.ingested_at)
    directory = job.workdir / f"{sha[:16]}-{uuid.uuid4().hex[:8]}"
    directory.mkdir(parents=True)
    try:
        with duckdb.connect() as con:
            migrate(con)  # the staging schema, the SQL macros and core.gpu_specs' shape
            load_reference_tables(con, job.reference)
            with ingest_limits(con, memory_limit=job.memory_limit, spill=directory / "spill"):
                try:
                    staged = stage(con, dataset, file)
                except Exception as error:  # the file is quarantined whole by the writer
                    raise_unless_content(error, path)
                    shutil.rmtree(directory, ignore_errors=True)
                    return Unit(job.source, sha, size_bytes, error=_read_error(dataset, file, error))
                check_staged(con, dataset.suite, dict(dataset.parameters), dataset.is_file_column)
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
    return Unit(job.source, sha, size_bytes, staged=staged, directory=directory)


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
    return [StageJob(dataset, source, ingested_at, workdir, known, memory_limit, reference) for source in sources]


def ingest_file(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, source: FileSource, ingested_at: datetime, limits: IngestLimits
) -> FileOutcome:
    """One file staged inline and applied: `apply(con, dataset, Unit(source), ...)`."""
    return apply(con, dataset, Unit(source), ingested_at, limits)


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
    dataset: str,
    outcome: FileOutcome,
    message: str,
    ingested_at: datetime,
    size_bytes: int | None,
) -> FileOutcome:
    """The file is quarantined with its error; registered when it was read (the same bytes are not read again)."""
    outcome.status = "quarantined"
    outcome.error = message
    with transaction(con):
        quarantine_file(con, dataset, outcome.source_file, outcome.content_sha256 or None, message, ingested_at)
        if size_bytes is not None:  # a file that could not even be read has no content hash to register
            record_file(con, outcome, size_bytes, ingested_at)
    return outcome


def quarantine_unreadable(
    con: duckdb.DuckDBPyConnection, dataset_name: str, source: FileSource, error: BaseException, ingested_at: datetime
) -> FileOutcome:
    """A file still unreadable after the task's retries: quarantined for tonight, not registered (so the
    next run reads it again)."""
    path = Path(source.path)
    outcome = FileOutcome(dataset_name, str(path), "", "quarantined", provider=source.provider, format=source.format)
    message = f"{path.name}: I/O error after retries: {describe_error(error)} ({path})"
    return _quarantine_whole_file(con, dataset_name, outcome, message, ingested_at, None)
