"""What the command line shows while a flow runs: our progress lines, Prefect's warnings and errors, and
third-party warnings as one plain line each (or not at all for known noise). Nothing here changes what a
flow does; `gpucost serve` and Prefect deployments keep Prefect's own logging."""

from __future__ import annotations

import logging
import os
import re
import sys
import time
import warnings
from typing import TextIO

from tasks.progress import TRANSIENT

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
WIDTH = 100  # every line the CLI writes fits a 100-column terminal

# Third-party warnings that say nothing a gpucost user can act on (filtered; anything else becomes one line).
KNOWN_NOISE = (
    # MLflow suggests type hints on PythonModel.predict: the model has an explicit signature instead
    (UserWarning, r".*Add type hints to the `predict` method"),
    (UserWarning, r".*Any type hint is inferred as AnyType"),
    # MLflow's hint that integer columns cannot hold missing values: the dataset schema only describes data
    (UserWarning, r".*Inferred schema contains integer column"),
)


def one_line(text: str, width: int = WIDTH) -> str:
    """No escape codes, no line breaks, at most `width` characters."""
    flat = " ".join(ANSI.sub("", text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def is_known_noise(message: object, category: type[Warning] = UserWarning) -> bool:
    text = ANSI.sub("", str(message))
    return any(issubclass(category, kind) and re.match(pattern, text) for kind, pattern in KNOWN_NOISE)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    # MLflow shows some advice under its own `simplefilter("once")`, which overrides any filter of ours
    if is_known_noise(message, category):
        return
    module = filename.rsplit("site-packages/", 1)[-1].split("/", 1)[0].removesuffix(".py")
    (file or sys.stderr).write(one_line(f"warning ({module}): {message}") + "\n")


class ProgressHandler(logging.Handler):
    """`gpucost.progress` records as lines: `HH:MM:SS message`. Ticks (fold j of k) overwrite one line on a
    terminal and are dropped otherwise, so logs and CI stay line-based and short."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(logging.DEBUG)
        self._stream = stream  # None: whatever sys.stderr is when a record comes (tests swap it)
        self.pending = False  # a tick is on screen without its newline

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stderr

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = self.stream
            transient = getattr(record, TRANSIENT, False)
            if transient and not stream.isatty():
                return
            text = one_line(f"{time.strftime('%H:%M:%S')} {record.getMessage()}")
            if transient:
                stream.write("\r\x1b[K" + text)
                self.pending = True
            else:
                stream.write(("\r\x1b[K" if self.pending else "") + text + "\n")
                self.pending = False
            stream.flush()
        except Exception:  # logging's contract: a handler never raises into the caller
            self.handleError(record)


class _OneLineRecords(logging.Filter):
    """On Prefect's console handler: third-party INFO chatter dropped (e.g. Great Expectations' temporary
    folders) and known noise dropped. Drops only: the record itself is shared with every other handler (log
    files, pytest's capture), so shortening it is the formatter's job (`_OneLineFormatter`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING and not record.name.startswith("prefect"):
            return False
        return not (record.name == "py.warnings"
                    and is_known_noise(record.getMessage().split(": ", 1)[-1]))


class _OneLineFormatter(logging.Formatter):
    """Wraps the console handler's formatter: every record one line, no escape codes, no traceback, cut so that
    the formatted line fits WIDTH (the command's last line says why a run failed). Formats a copy, so other
    handlers still see the whole message."""

    PREFIX = len("01:37:27.756 | WARNING | ")

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        run = getattr(record, "flow_run_name", None) or getattr(record, "task_run_name", None)
        label = f"Flow run {run!r} - " if run else f"{record.name} - "
        short = logging.makeLogRecord(record.__dict__)
        short.msg = one_line(record.getMessage(), max(WIDTH - self.PREFIX - len(label), 20))
        short.args, short.exc_info, short.exc_text, short.stack_info = None, None, None, None
        return self.inner.format(short)


def filter_known_noise() -> None:
    for category, pattern in KNOWN_NOISE:
        warnings.filterwarnings("ignore", message=pattern, category=category)


def quiet_prefect_environment() -> None:
    """Before Prefect is imported: its console shows warnings and errors only (our progress says the rest)."""
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    filter_known_noise()
    warnings.showwarning = _show_warning


def configure_cli_output(stream: TextIO | None = None) -> None:
    """After Prefect is imported (it installs its own warning capture and handlers at import)."""
    filter_known_noise()
    logging.captureWarnings(False)
    warnings.showwarning = _show_warning
    progress = logging.getLogger("gpucost.progress")
    if not any(isinstance(h, ProgressHandler) for h in progress.handlers):
        progress.addHandler(ProgressHandler(stream))
    progress.setLevel(logging.DEBUG)
    progress.propagate = False
    for handler in logging.getLogger().handlers:  # Prefect's console handler sits on the root logger
        if not type(handler).__module__.startswith("prefect"):
            continue  # others (a log file, pytest's capture) keep every record as it is
        if not any(isinstance(f, _OneLineRecords) for f in handler.filters):
            handler.addFilter(_OneLineRecords())
        if not isinstance(handler.formatter, _OneLineFormatter):
            handler.setFormatter(_OneLineFormatter(handler.formatter))
    # MLflow's own logger prints its advice at WARNING (e.g. CloudPickle serialisation), Great Expectations
    # its temporary folders at INFO: errors only
    for name in ("mlflow", "great_expectations"):
        logging.getLogger(name).setLevel(logging.ERROR)
