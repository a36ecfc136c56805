"""`gpucost sql` runs a person's query with bounds (config/settings.toml [sql], flags lift them per query):

- a statement timeout: a watchdog thread interrupts DuckDB (`connection.interrupt()`) when the query runs past
  `timeout_seconds` (0: none), so `select sum(hash(a)) from range(1e11)` stops instead of running until killed;
- a memory limit on DuckDB (`memory_limit`), so one query cannot take the machine's memory;
- the table view fetches at most `max_rows` rows (0: all) and says when it cut the result; CSV streams every row
  in batches (memory does not grow with the result);
- a cell longer than `max_cell_chars` is cut in the table view with a visible mark saying how much is left out
  (never silently); CSV keeps whole values.
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
CTRL_C_POLL_SECONDS = 0.05
INTERRUPTED_MESSAGE = "interrupted: the query was stopped (Ctrl-C); nothing was changed"


class QueryTimeout(RuntimeError):
    """The query ran past its timeout and was interrupted."""


@dataclass(frozen=True)
class SqlBounds:
    timeout_seconds: float = 60.0   # 0: no timeout
    max_rows: int = 1000            # table view; 0: every row
    max_cell_chars: int = 10_000    # table view


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
    """The first `max_rows` rows (and whether there were more), within the timeout; None for a statement that
    returns no rows. Raises QueryTimeout."""
    with _stopped_after(con, bounds.timeout_seconds):
        result = con.execute(query)
        if result.description is None:
            return None
        columns = [column[0] for column in result.description]
        if bounds.max_rows <= 0:
            return TableResult(columns, result.fetchall(), cut=False)
        rows = result.fetchmany(bounds.max_rows + 1)  # one more than shown: were there more?
    return TableResult(columns, rows[: bounds.max_rows], cut=len(rows) > bounds.max_rows)


def write_csv(con: duckdb.DuckDBPyConnection, query: str, timeout_seconds: float, out: TextIO) -> int | None:
    """Every row as CSV to `out`, fetched in batches of BATCH_ROWS (memory does not grow with the result), the
    whole within the timeout; returns the rows written (None: the statement returns no rows). Raises QueryTimeout."""
    written = 0
    with _stopped_after(con, timeout_seconds):
        result = con.execute(query)
        if result.description is None:
            return None
        writer = csv.writer(out)
        writer.writerow([column[0] for column in result.description])
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
def _stopped_after(con: duckdb.DuckDBPyConnection, timeout_seconds: float) -> Iterator[None]:
    with ctrl_c_interrupts(con) as pressed, watchdog(con, timeout_seconds) as fired:
        try:
            yield
        except (duckdb.InterruptException, RuntimeError) as error:
            if pressed.is_set() and is_interrupt(error):
                raise KeyboardInterrupt from error
            if fired.is_set() and is_interrupt(error):
                raise QueryTimeout(timeout_message(timeout_seconds)) from error
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
