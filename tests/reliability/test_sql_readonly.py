"""`gpucost sql` is read-only for real: every way out of the published database that DuckDB offers is refused,
in one line, with exit status 1, and neither database (nor any other file) changes."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.reliability.conftest import States
from tests.reliability.helpers import assert_one_line


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# (query with {home}, {out} and {other} (the database not being queried) filled in, the refusal DuckDB gives:
# a regular expression). Only the queried database's own file stays readable (as the database it is).
# Overwriting a database file: the one being queried is refused by DuckDB's own guard, the other one because
# no file outside the database may be touched at all.
OVERWRITE = "belongs to an attached database|file system operations are disabled by configuration"
ESCAPES = [
    ("COPY (select 1) TO '{home}/warehouse.duckdb'", OVERWRITE),
    ("COPY (select 1) TO '{home}/published.duckdb'", OVERWRITE),
    ("COPY (select 1 as x) TO '{out}/copy.csv'", "file system operations are disabled by configuration"),
    ("ATTACH '{other}' AS w (READ_WRITE)", "file system operations are disabled by configuration"),
    ("ATTACH '{out}/new.duckdb' AS n", "file system operations are disabled by configuration"),
    ("CREATE TABLE sneaky AS select 1", "attached in read-only mode"),
    ("CREATE SCHEMA sneaky", "attached in read-only mode"),
    ("EXPORT DATABASE '{out}/export'", "file system operations are disabled by configuration"),
    ("select * from read_csv('/etc/passwd')", "file system operations are disabled by configuration"),
    ("select * from read_text('{other}')", "file system operations are disabled by configuration"),
    ("select * from glob('/etc/*')", "file system operations are disabled by configuration"),
    ("select * from read_parquet('http://127.0.0.1:9/x.parquet')", "disabled by configuration"),
    ("SET memory_limit = '1GB'", "the configuration has been locked"),
    ("SET enable_external_access = true", "the configuration has been locked"),
    ("RESET lock_configuration", "the configuration has been locked"),
    ("INSTALL httpfs", "file system operations are disabled by configuration"),
    ("LOAD httpfs", "disabled through configuration"),
]


@pytest.mark.parametrize("warehouse", [False, True], ids=["published", "warehouse"])
def test_every_escape_from_gpucost_sql_is_refused(work_home: States, tmp_path: Path, warehouse: bool) -> None:
    from gpucost.cli import app

    home = work_home.restore("base")
    out = tmp_path / "out"
    out.mkdir()
    files = [home / "published.duckdb", home / "warehouse.duckdb"]
    before = {f: digest(f) for f in files}
    runner = CliRunner()
    for template, refusal in ESCAPES:
        other = home / ("published.duckdb" if warehouse else "warehouse.duckdb")
        query = template.format(home=home, out=out, other=other)
        result = runner.invoke(app, ["sql", *(["--warehouse"] if warehouse else []), query])
        assert result.exit_code == 1, (query, result.output)
        line = assert_one_line(result.stderr, "error:")
        assert re.search(refusal, line), (query, line)
    assert {f: digest(f) for f in files} == before
    assert os.listdir(out) == []  # nothing written anywhere
    # and it still answers what it is for
    result = runner.invoke(app, ["sql", "--csv", "select count(*) > 0 as ok from gpu_cost_ranking"])
    assert result.exit_code == 0 and result.stdout.splitlines() == ["ok", "True"], result.output
