"""`gpucost sql` runs a person's query with bounds (config/settings.toml [sql], flags lift them per query):

- a statement timeout: a watchdog thread interrupts DuckDB (`connection.interrupt()`) when the query runs past
  `timeout_seconds` (0: none), so `select sum(hash(a)) from range(1e11)` stops instead of running until killed;
- a memory limit on DuckDB (`memory_limit`), so one query cannot take the machine's memory;
- the table view fetches at most `max_rows` rows (0: all) and says when it cut the result; CSV streams every row
  in batches (memory does not grow with the result);
- a cell longer than `max_cell_chars` is cut in the table view with a visible mark saying how much is left out
  (never silently); CSV keeps whole values;
- the result text the client holds is capped (`max_result_mb`): DuckDB itself refuses a row whose text is longer
  (the row never reaches Python, where one 1 GB value became 4-7 GB of copies), and the table view stops when the
  rows it holds pass it. Either ends the query with one line.
"""

from __future__ import annotations

import csv
import os
import select
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

import duckdb

from tasks.display import printable

BATCH_ROWS = 10_000
TABLE_BATCH_ROWS = 100  # the table view counts the text it holds after each batch
CTRL_C_POLL_SECONDS = 0.05
INTERRUPTED_MESSAGE = "interrupted: the query was stopped (Ctrl-C); nothing was changed"


class QueryTimeout(RuntimeError):
    """The query ran past its timeout and was interrupted."""


class ResultTooLarge(RuntimeError):
    """The result's text passed the client's budget (config/settings.toml [sql] max_result_mb)."""


# DuckDB's error() raised by the guard below: how a refused row is told from the query's own errors
OVER_BUDGET = "gpucost: a result row holds more text than the client budget"
# The user's statement is wrapped as a relation named so and each row's text measured column by column (a VARCHAR
# cast to VARCHAR is not copied: measuring the row cast whole copied a 1 GB value three times inside DuckDB). The
# budget is an int from the typed settings and the columns are the relation's own, quoted: no text from the user
# is put together into SQL here (the statement itself stays whole inside DuckDB's relation).
GUARDED_ROWS = ("select * from gpucost_query_rows where case when {} > {} then error('"  # noqa: S608 (see above)
                + OVER_BUDGET + "') else true end")


def quoted(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def guarded_sql(columns: list[str], max_bytes: int) -> str:
    text_bytes = " + ".join(f"coalesce(strlen(cast({quoted(c)} as varchar)), 0)" for c in columns) or "0"
    return GUARDED_ROWS.format(text_bytes, int(max_bytes))


@dataclass(frozen=True)
class SqlBounds:
    timeout_seconds: float = 60.0   # 0: no timeout
    max_rows: int = 1000            # table view; 0: every row
    max_cell_chars: int = 10_000    # table view
    max_result_mb: int = 256        # result text the client holds (a row; the table view's rows together)

    @property
    def max_result_bytes(self) -> int:
        return self.max_result_mb * 2**20


def too_large_message(bounds: SqlBounds, rows_held: int | None = None) -> str:
    what = (f"the {rows_held:,} row(s) the table view holds hold" if rows_held is not None
            else "a row of the result holds")
    return (f"query stopped: {what} more than {bounds.max_result_mb:,} MB of text (config/settings.toml [sql] "
            "max_result_mb; select fewer or shorter values, e.g. left(column, 1000))")


def guarded_rows(con: duckdb.DuckDBPyConnection, query: str, bounds: SqlBounds) \
        -> tuple[list[str], duckdb.DuckDBPyConnection] | None:
    """The statement's column names (as it names it) and its running result, streamed, each row refused by DuckDB
    if its text passes the budget; None for a statement that returns no rows. A statement DuckDB cannot wrap
    runs as it is."""
    relation = con.sql(query)
    if relation is None:
        return None
    guarded = query
    try:
        named = relation.query("gpucost_query_rows", "select * from gpucost_query_rows")  # duplicates named apart
        wrapped = None if named is None else relation.query("gpucost_query_rows",
                                                            guarded_sql(named.columns, bounds.max_result_bytes))
        if wrapped is not None:
            guarded = wrapped.sql_query()
    except duckdb.Error:
        pass
    result = con.execute(guarded)
    return relation.columns, result


def _refused(error: BaseException, bounds: SqlBounds) -> ResultTooLarge | None:
    return ResultTooLarge(too_large_message(bounds)) if OVER_BUDGET in str(error) else None


@dataclass
class TableResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    cut: bool               # more rows than max_rows: the view shows the first max_rows


@contextmanager
def watchdog(con: duckdb.DuckDBPyConnection, timeout_seconds: float) -> Iterator[threading.Event]:
    """Interrupt `con`'s running query after `timeout_seconds` (0: never); the event says it fired."""
    fired = threading.Event()
    if timeout_seconds <= 0:
        yield fired
        return

    def stop() -> None:
        fired.set()
        con.interrupt()

    timer = threading.Timer(timeout_seconds, stop)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()


def timeout_message(seconds: float) -> str:
    return (f"query stopped after {seconds:g} s (config/settings.toml [sql] timeout_seconds; `--timeout 0` lifts "
            "it for one query)")


def fetch_table(con: duckdb.DuckDBPyConnection, query: str, bounds: SqlBounds) -> TableResult | None:
    """The first `max_rows` rows (and whether there were more), within the timeout and the text budget; None for a
    statement that returns no rows. Raises QueryTimeout, ResultTooLarge."""
    with _stopped_after(con, bounds):
        found = guarded_rows(con, query, bounds)
        if found is None:
            return None
        columns, result = found
        wanted = bounds.max_rows + 1 if bounds.max_rows > 0 else None  # one more than shown: were there more?
        rows: list[tuple[Any, ...]] = []
        held = 0
        while wanted is None or len(rows) < wanted:
            batch = result.fetchmany(TABLE_BATCH_ROWS if wanted is None else min(TABLE_BATCH_ROWS, wanted - len(rows)))
            if not batch:
                break
            held += sum(len(str(value)) for row in batch for value in row)
            rows += batch
            if held > bounds.max_result_bytes:
                raise ResultTooLarge(too_large_message(bounds, len(rows)))
    if bounds.max_rows <= 0:
        return TableResult(columns, rows, cut=False)
    return TableResult(columns, rows[: bounds.max_rows], cut=len(rows) > bounds.max_rows)


def write_csv(con: duckdb.DuckDBPyConnection, query: str, bounds: SqlBounds, out: TextIO) -> int | None:
    """Every row as CSV to `out`, fetched in batches of BATCH_ROWS (memory does not grow with the result), the
    whole within the timeout, each row within the text budget; returns the rows written (None: the statement
    returns no rows). Raises QueryTimeout, ResultTooLarge (the rows before the refused one are written)."""
    written = 0
    with _stopped_after(con, bounds):
        found = guarded_rows(con, query, bounds)
        if found is None:
            return None
        columns, result = found
        writer = csv.writer(out)
        writer.writerow(columns)
        while batch := result.fetchmany(BATCH_ROWS):
            writer.writerows(batch)
            written += len(batch)
    return written


@contextmanager
def ctrl_c_interrupts(con: duckdb.DuckDBPyConnection) -> Iterator[threading.Event]:
    """Ctrl-C interrupts `con`'s running query at once. While DuckDB computes, the main thread waits inside C++, so
    Python's SIGINT handler runs only after the query ends (never, for an endless one), and the signal itself may
    land on any of DuckDB's threads. Python's C-level handler writes the signal's number to a wakeup pipe from
    whichever thread receives it: a thread reading that pipe calls `con.interrupt()`, and again until the block
    ends, because DuckDB forgets an interrupt that comes before its query starts. The event says Ctrl-C came."""
    pressed = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield pressed
        return
    done = threading.Event()
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)

    def on_ctrl_c(signum: int, frame: object) -> None:
        pressed.set()

    # replaces a SIGINT ignored by inheritance (a parent that ignores it, e.g. a script's background job) too:
    # the user's Ctrl-C counts while a query runs
    previous_handler = signal.signal(signal.SIGINT, on_ctrl_c)
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)

    def wait_for_ctrl_c() -> None:
        while not done.is_set():
            ready, _, _ = select.select([read_end], [], [], CTRL_C_POLL_SECONDS)
            if ready and signal.SIGINT in os.read(read_end, 512):  # one byte per signal: its number
                pressed.set()
                while True:
                    con.interrupt()
                    if done.wait(CTRL_C_POLL_SECONDS):
                        return

    waiter = threading.Thread(target=wait_for_ctrl_c, name="sql-ctrl-c", daemon=True)
    waiter.start()
    try:
        yield pressed
    finally:
        done.set()
        waiter.join()
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous_handler is None else previous_handler)
        os.close(read_end)
        os.close(write_end)


@contextmanager
def _stopped_after(con: duckdb.DuckDBPyConnection, bounds: SqlBounds) -> Iterator[None]:
    with ctrl_c_interrupts(con) as pressed, watchdog(con, bounds.timeout_seconds) as fired:
        try:
            yield
        except (duckdb.InterruptException, RuntimeError) as error:
            if pressed.is_set() and is_interrupt(error):
                raise KeyboardInterrupt from error
            if fired.is_set() and is_interrupt(error):
                raise QueryTimeout(timeout_message(bounds.timeout_seconds)) from error
            raise
        except duckdb.Error as error:
            refused = _refused(error, bounds)
            if refused is not None:
                raise refused from None
            raise
        if pressed.is_set():  # Ctrl-C came as the last rows were fetched: still an interrupted command
            raise KeyboardInterrupt


def is_interrupt(error: BaseException) -> bool:
    """DuckDB's ways of saying a query was interrupted (Ctrl-C, or the watchdog): InterruptException, or a
    RuntimeError 'Query interrupted' when the interrupt came while results were fetched."""
    return isinstance(error, KeyboardInterrupt | duckdb.InterruptException) or (
        isinstance(error, RuntimeError) and "interrupted" in str(error).lower())


def cell_text(value: object, max_chars: int) -> tuple[str, bool]:
    """A value as the table view shows it: escaped (tasks/display.py), cut past `max_chars` with a visible mark.
    Returns the text and whether it was cut."""
    if value is None:
        return "", False
    text = printable(str(value))
    if len(text) <= max_chars:
        return text, False
    return f"{text[:max_chars]}… [cut: {len(text) - max_chars:,} more characters]", True
