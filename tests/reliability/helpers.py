"""Checks shared by the reliability tests: table checksums, 'a file is in or out as a whole', children to kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb

from tasks.processes import processes_with_env
from tasks.settings import PROJECT_ROOT

PYTHON = sys.executable
GPUCOST = Path(sys.executable).with_name("gpucost")
WAREHOUSE_SCHEMAS = ("raw", "core", "quarantine", "features", "marts")

# Every row of a table folded into (row count, sum of row hashes): equal tables give equal pairs, and a
# missing, extra or changed row changes them. Sums (not XOR) so that duplicated rows do not cancel.
TABLES_SQL = """
select table_schema || '.' || table_name from information_schema.tables
where table_type = 'BASE TABLE' and table_schema in ?
order by 1
"""

CHECKSUM_SQL = "select count(*), sum(hash(t)::hugeint) from query_table($name) t"


def checksums(con: duckdb.DuckDBPyConnection, schemas: tuple[str, ...] = WAREHOUSE_SCHEMAS) -> dict[str, tuple]:
    tables = [name for (name,) in con.execute(TABLES_SQL, [list(schemas)]).fetchall()]
    return {name: con.execute(CHECKSUM_SQL, {"name": name}).fetchall()[0] for name in tables}


def warehouse_checksums(path: Path) -> dict[str, tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return checksums(con)
    finally:
        con.close()


# gpucost's mark on a database it published (sql/publish/marker.sql) records when it was written: a rerun
# publishes the same tables with a new mark
PUBLICATION_MARK = "main.gpucost_publication"


def published_checksums(path: Path) -> dict[str, tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {name: sums for name, sums in checksums(con, ("main",)).items() if name != PUBLICATION_MARK}
    finally:
        con.close()


# A file is in or out as a whole: per registered file, the rows of each layer match the counts the ingest
# recorded for it, and no layer holds rows of a file the registry does not know (a half-written file).
WHOLE_FILE_VIOLATIONS = """
with files as (select * from raw.ingested_files),
core_price_rows as (
    select content_sha256, count(*) as n
    from (
        select content_sha256 from core.price_observations
        union all
        select content_sha256 from core.storage_price_observations  -- storage volume prices (AWS offer files)
    )
    group by all
),
rejected as (select dataset, content_sha256, count(*) as n from quarantine.rejected_rows group by all),
mismatch as (
    select f.dataset, f.source_file, 'core rows ' || coalesce(c.n, 0) || ' != rows_loaded ' || f.rows_loaded as problem
    from files f left join core_price_rows c using (content_sha256)
    where f.dataset = 'prices' and f.status = 'loaded' and coalesce(c.n, 0) != f.rows_loaded
    union all
    select f.dataset, f.source_file, 'quarantined rows ' || coalesce(q.n, 0) || ' != ' || f.rows_quarantined
    from files f left join rejected q using (dataset, content_sha256)
    where f.status = 'loaded' and coalesce(q.n, 0) != f.rows_quarantined
    union all
    select f.dataset, f.source_file, 'a quarantined file has rows in raw/core'
    from files f
    where f.status = 'quarantined'
        and exists (select 1 from core_price_rows c where c.content_sha256 = f.content_sha256)
    union all
    select f.dataset, f.source_file, 'a read file that did not land'
    from files f where f.landed_path is null and f.size_bytes is not null and f.source_file not like 'mlflow:%'
),
orphans as (
    select 'prices', content_sha256, 'core rows of an unregistered file' from core_price_rows
    where content_sha256 not in (select content_sha256 from files where dataset = 'prices')
    union all
    select 'telemetry', content_sha256, 'current runs of an unregistered file' from core.telemetry_runs
    where content_sha256 not in (select content_sha256 from files where dataset = 'telemetry')
    union all
    select dataset, content_sha256, 'quarantined rows of an unregistered file' from rejected
    where (dataset, content_sha256) not in (select (dataset, content_sha256) from files)
),
final as (select * from mismatch union all select * from orphans)
select * from final
"""


def whole_file_violations(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """The rows above, and after the landing zone's recovery (what the next ingest runs first): a registry row
    whose landed file is missing, or a landed file no registry row names."""
    from tasks.ingest.landing import landed_files, landing_dir, recover

    violations = con.sql(WHOLE_FILE_VIOLATIONS).fetchall()
    folder = landing_dir(con)
    if folder is None:
        return violations
    recover(con, folder)
    named = {path for (path,) in con.sql(
        "select distinct landed_path from raw.ingested_files where landed_path is not null").fetchall()}
    on_disk = {path.relative_to(folder).as_posix() for path in landed_files(folder)}
    violations += [("landing", path, "registered, not landed") for path in sorted(named - on_disk)]
    violations += [("landing", path, "landed, not registered") for path in sorted(on_disk - named)]
    return violations


def start_child(args: list[str], env: dict[str, str], stderr: Path) -> subprocess.Popen:
    """A child process with stdout piped (for markers) and stderr to a file (a full pipe would block it)."""
    with open(stderr, "w") as err:
        return subprocess.Popen(args, cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True)


def kill_at_marker(child: subprocess.Popen, marker: str, stderr: Path) -> None:
    """Read the child's stdout until the line starting with `marker`, then SIGKILL it."""
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith(marker):
                os.kill(child.pid, signal.SIGKILL)
                break
        else:
            raise AssertionError(f"child ended without reaching {marker!r}: {stderr.read_text()[-3000:]}")
    finally:
        if child.poll() is None:
            child.kill()  # our own child, not yet reaped: its pid cannot have been reused
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, stderr.read_text()[-3000:]


def processes_of(home: Path) -> list[tuple[int, str]]:
    """Every live process whose environment has GPUCOST_HOME=home: the run, whatever it started (Prefect's
    server, workers) and any orphan of it, wherever it was re-parented; with its command line."""
    found = []
    for pid in processes_with_env("GPUCOST_HOME", str(home)):
        try:
            found.append((pid, (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:160]))
        except OSError:
            continue  # ended meanwhile
    return found


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def assert_one_line(stderr: str, *fragments: str) -> str:
    """Exactly one `error:` line, it is the last thing said, it holds every fragment, and no traceback."""
    lines = error_lines(stderr)
    assert len(lines) == 1, stderr[-4000:]
    assert stderr.strip().splitlines()[-1] == lines[0], stderr[-4000:]
    assert "Traceback" not in stderr and "╭─" not in stderr, stderr[-4000:]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]
