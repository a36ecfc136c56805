"""Pre-flight checks: every store a command will touch is looked at before any work starts, and each known
failure becomes one line naming the file and the next step (its exit code: gpucost/commands.py).

- free space under GPUCOST_HOME against config/settings.toml [preflight] min_free_mb;
- the warehouse and the published database: a DuckDB file (header), and every table read whole, which
  makes DuckDB verify every block's checksum (damage found now, not in publish after the night's work);
- the MLflow store when it is a local SQLite file: SQLite header and `pragma quick_check`.

A damaged published database or MLflow store does not stop a night: publish rebuilds the first, and the
second makes the night skip training and rank with whatever model still loads (README, "When a step
fails"). They are fatal only for the commands that need them (`gpucost sql`, `gpucost train`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tasks.publishing.ownership import written_by_us
from tasks.settings import DATA_DIR, EXPECTATIONS_DIR, PROJECT_ROOT, SQL_DIR, Environment
from tasks.stores import Problem, mlflow_problem, short_cause
from tasks.warehouse import connect, execute, query

DUCKDB_MAGIC = b"DUCK"         # bytes 8..12 of every DuckDB database file


class PreflightError(RuntimeError):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def _existing_folder(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_mb(folder: Path) -> float:
    return shutil.disk_usage(_existing_folder(folder)).free / 1e6


def free_space_problem(folder: Path, min_free_mb: float) -> Problem | None:
    free = free_mb(folder)
    if free >= min_free_mb:
        return None
    return Problem("disk", str(folder),
                   f"only {free:.0f} MB free under {folder}; this command needs at least {min_free_mb:.0f} MB "
                   "(config/settings.toml [preflight] min_free_mb): free space there or point GPUCOST_HOME "
                   "at a larger disk; nothing was changed", "disk_full")


def _damaged_duckdb(store: str, path: Path, cause: str, home: Path) -> Problem:
    if store == "published" and written_by_us(home, path):
        step = "run `gpucost publish` to rebuild it from the warehouse"
    elif store == "published":  # publish replaces only what gpucost made (tasks/publishing/ownership.py)
        step = ("it is not a file gpucost published, so `gpucost publish` will not replace it: move it aside or "
                "point GPUCOST_PUBLISHED at another file")
    else:
        step = ("restore it from a backup, or move it aside and rebuild it from your price and telemetry files "
                "(`gpucost run` reads every file of config/sources.toml again)")
    return Problem(store, str(path), f"the {store} database {path} is damaged ({cause}); {step}", "damaged")


def duckdb_problem(path: Path, store: str, home: Path) -> Problem | None:
    """None when the file is absent (the command creates it) or reads whole (`home`: the state folder, which
    records what gpucost published). A file another process holds
    raises tasks.warehouse.WarehouseBusyError (its own message and exit code)."""
    import duckdb


    if not path.exists():
        return None
    with open(path, "rb") as fh:
        header = fh.read(12)
    if len(header) < 12 or header[8:12] != DUCKDB_MAGIC:
        what = "is empty (0 bytes)" if not header else "is not a DuckDB database (its header is overwritten)"
        return _damaged_duckdb(store, path, what, home)
    try:
        con = connect(path, read_only=True)
    except duckdb.Error as error:
        return _damaged_duckdb(store, path, short_cause(error), home)
    try:
        for (name,) in query(con, "preflight/tables").fetchall():
            execute(con, "preflight/read_table", {"name": name}).fetchall()
    except duckdb.Error as error:
        return _damaged_duckdb(store, path, short_cause(error), home)
    finally:
        con.close()
    return None


@dataclass
class Preflight:
    """The outcome: fatal problems raise; the others are notes the command prints and carries on."""

    notes: list[Problem]

    def problem(self, store: str) -> Problem | None:
        return next((p for p in self.notes if p.store == store), None)


def check_stores(
    home: Path,
    min_free_mb: float,
    warehouse: Path | None = None,
    published: Path | None = None,
    tracking_uri: str | None = None,
    fatal: tuple[str, ...] = ("disk", "warehouse"),
) -> Preflight:
    """Check the stores given (None = not touched by this command). The first problem whose store is in
    `fatal` raises PreflightError; the rest are returned as notes."""
    found: list[Problem | None] = []
    if min_free_mb > 0:
        found.append(free_space_problem(home, min_free_mb))
    if warehouse is not None:
        found.append(duckdb_problem(warehouse, "warehouse", home))
    if published is not None:
        found.append(duckdb_problem(published, "published", home))
    if tracking_uri is not None:
        found.append(mlflow_problem(tracking_uri))
    problems = [p for p in found if p is not None]
    for problem in problems:
        if problem.store in fatal:
            raise PreflightError(problem)
    return Preflight(notes=problems)


def disk_full_message(file: str, home: Path, min_free_mb: float) -> str:
    where = f"writing {file}" if file else f"under {home}"
    return (f"no space left on device {where} ({free_mb(home):.0f} MB free under {home}; keep at least "
            f"{min_free_mb:.0f} MB free, config/settings.toml [preflight] min_free_mb): free space and run the "
            "command again; nothing half-written is served, the previous results are still published")


# ------------------------------------------------------------------------------------- environment overrides

def _folder_problem(variable: str, folder: Path, must_write: bool) -> str | None:
    """A folder an override names: an existing folder (readable; writable when `must_write`), or one that can be
    made (its nearest existing parent is a writable folder)."""
    import os

    if folder.exists() and not folder.is_dir():
        return f"{variable}={folder}: not a folder"
    existing = _existing_folder(folder)
    if not existing.is_dir():
        return f"{variable}={folder}: {existing} is not a folder"
    if folder.exists() and not os.access(folder, os.R_OK | os.X_OK):
        return f"{variable}={folder}: the folder is not readable"
    if must_write and not os.access(existing, os.W_OK | os.X_OK):
        what = "the folder" if existing == folder else f"its parent {existing}"
        return f"{variable}={folder}: {what} is read-only (gpucost writes there)"
    return None


def _file_problem(variable: str, file: Path) -> str | None:
    """A database file an override names: not a folder, and its folder usable for writing."""
    if file.is_dir():
        return f"{variable}={file}: a folder, not a file"
    folder = file.parent
    if folder.exists() and not folder.is_dir():
        return f"{variable}={file}: {folder} is not a folder"
    problem = _folder_problem(variable, folder, must_write=True)
    return None if problem is None else problem.replace(f"{variable}={folder}: the folder", f"{variable}={file}: "
                                                        f"its folder {folder}").replace(
        f"{variable}={folder}:", f"{variable}={file}:")


def _url_problem(variable: str, url: str) -> str | None:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as error:
        return f"{variable}={url!r}: not a URL ({error})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{variable}={url!r}: give an http:// or https:// URL with a host"
    return None


def _cron_problem(variable: str, cron: str) -> str | None:
    from cronsim import CronSim, CronSimError

    try:
        CronSim(cron, datetime.now(UTC))
    except (CronSimError, ValueError) as error:
        return f"{variable}={cron!r}: not a cron expression ({error})"
    return None


def _timezone_problem(variable: str, zone: str) -> str | None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return f"{variable}={zone!r}: not a time zone name (e.g. UTC, Europe/Berlin)"
    return None


def install_problem(config_dir_set: bool = False) -> str | None:
    """gpucost reads its SQL, suites, reference data and config from the project folder beside tasks/; an install
    without them (a non-editable `pip install .` copies only the Python packages) is one line, not a missing-file
    traceback in the middle of a night. `config_dir_set`: GPUCOST_CONFIG_DIR names the config folder instead."""
    needed = [SQL_DIR, EXPECTATIONS_DIR, DATA_DIR] + ([] if config_dir_set else [PROJECT_ROOT / "config"])
    missing = [folder.name + "/" for folder in needed if not folder.is_dir()]
    if not missing:
        return None
    return (f"{PROJECT_ROOT}: no {', '.join(missing)} beside the code: gpucost runs from its project folder; "
            "install it from a clone with `pip install -e .` (or `make run`)")


def environment_problem(writes_home: bool = True) -> str | None:
    """The first environment override that cannot work, as one line naming the variable (the command exits 2
    before anything starts); None when every override set is usable. Types are checked by tasks.settings.
    `writes_home`: the command writes to the state folder, which must then be writable even when it is the default
    (./.gpucost, no GPUCOST_HOME)."""

    environment = Environment.current()
    checks: list[str | None] = [install_problem(config_dir_set=environment.config_dir is not None)]
    if environment.home is not None:
        checks.append(_folder_problem("GPUCOST_HOME", environment.home.resolve(), must_write=writes_home))
    elif writes_home:
        problem = _folder_problem("GPUCOST_HOME", (Path.cwd() / ".gpucost").resolve(), must_write=True)
        checks.append(None if problem is None else problem.replace("GPUCOST_HOME=", "GPUCOST_HOME (unset, so ", 1)
                      .replace(": ", "): ", 1))
    if environment.config_dir is not None:
        folder = environment.config_dir.resolve()
        checks.append(f"GPUCOST_CONFIG_DIR={folder}: no such folder" if not folder.exists()
                      else _folder_problem("GPUCOST_CONFIG_DIR", folder, must_write=False))
    for variable, file in (("GPUCOST_WAREHOUSE", environment.warehouse),
                           ("GPUCOST_PUBLISHED", environment.published)):
        if file is not None:
            checks.append(_file_problem(variable, file.resolve()))
    if environment.parquet_dir:
        folder = Path(environment.parquet_dir).expanduser()
        if folder.is_absolute():
            checks.append(_folder_problem("GPUCOST_PARQUET_DIR", folder, must_write=True))
    for variable, url in environment.fetch_urls().items():
        checks.append(_url_problem(variable, url))
    if environment.nightly_cron:
        checks.append(_cron_problem("GPUCOST_NIGHTLY_CRON", environment.nightly_cron))
    if environment.nightly_timezone:
        checks.append(_timezone_problem("GPUCOST_NIGHTLY_TIMEZONE", environment.nightly_timezone))
    return next((c for c in checks if c is not None), None)
