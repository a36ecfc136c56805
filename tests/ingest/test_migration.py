"""A warehouse built by the code before the landing zone (main 479a9fb, checked out from this repository's history
into a temporary folder and run in its own process) migrates once, in one transaction: every unit's JSON records
land as a JSON Lines file, the registry names it, the record tables are dropped, the core rows are untouched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tasks import landing_zone
from tasks.ingest import landing
from tasks.settings import PROJECT_ROOT
from tasks.warehouse import connect

BEFORE_LANDING = "479a9fb"  # main when issue 25 was filed: raw.price_records / raw.telemetry_records
PRICE_FILE = PROJECT_ROOT / "data/samples/prices/skypilot_v8_aws_gpu_subset.csv"
TELEMETRY_FILE = PROJECT_ROOT / "data/samples/telemetry/published_benchmarks.csv"
OLD_INGEST = f"""
from datetime import UTC, datetime
from pathlib import Path
from tasks.prices.ingest import PriceSource, ingest_price_file
from tasks.reference import load_reference_tables, read_aliases
from tasks.telemetry.ingest import ingest_telemetry_file
from tasks.warehouse import connect
at = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
con = connect()
load_reference_tables(con)
print(ingest_price_file(con, PriceSource(Path({str(PRICE_FILE)!r}), "aws", "skypilot"), read_aliases(), at).status)
print(ingest_telemetry_file(con, Path({str(TELEMETRY_FILE)!r}), read_aliases(), at).status)
con.close()
"""
# the old code runs in a process of its own
pytestmark = pytest.mark.slow
CORE_TABLES = ("core.price_observations", "core.telemetry_runs", "quarantine.rejected_rows", "raw.ingested_files")


@pytest.fixture(scope="module")
def old_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse file written by the code of BEFORE_LANDING (a fault fixture: made here, not committed)."""
    if shutil.which("git") is None or subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "cat-file", "-e", BEFORE_LANDING], capture_output=True).returncode:
        pytest.skip(f"commit {BEFORE_LANDING} is not in this checkout's history")
    work = tmp_path_factory.mktemp("old")
    archive = subprocess.run(["git", "-C", str(PROJECT_ROOT), "archive", BEFORE_LANDING, "tasks", "sql", "config",
                              "expectations", "data/reference"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
    home = work / "home"
    env = {**os.environ, "PYTHONPATH": str(work), "GPUCOST_HOME": str(home)}
    env.pop("GPUCOST_CONFIG_DIR", None)
    done = subprocess.run([sys.executable, "-c", OLD_INGEST], cwd=work, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["loaded", "loaded"]
    return home / "warehouse.duckdb"


def _checksums(con: duckdb.DuckDBPyConnection, columns: dict[str, list[str]]) -> dict[str, tuple]:
    """Rows and the sum of row hashes per table, over `columns` (the old warehouse's: later DDL adds columns)."""
    sums = {}
    for table in CORE_TABLES:
        relation = con.table(table).select(*[duckdb.ColumnExpression(c) for c in columns[table]])
        sums[table] = relation.project("hash(cast(struct_pack(*columns(*)) as varchar)) as h").aggregate(
            "count(*), sum(h)").fetchall()[0]
    return sums


def _copy(old_warehouse: Path, tmp_path: Path) -> Path:
    path = tmp_path / "home" / "warehouse.duckdb"
    path.parent.mkdir(parents=True)
    shutil.copyfile(old_warehouse, path)
    return path


def test_an_old_warehouse_migrates_its_records_to_the_landing_zone(old_warehouse: Path, tmp_path: Path) -> None:
    path = _copy(old_warehouse, tmp_path)
    with duckdb.connect(str(path), read_only=True) as old:
        columns = {table: old.table(table).columns for table in CORE_TABLES}
        before = _checksums(old, columns)
        records = dict(old.sql("select content_sha256, count(*) from raw.price_records group by all union all "
                               "select content_sha256, count(*) from raw.telemetry_records group by all").fetchall())
        record_of_line_2 = old.sql("select raw_values::varchar from raw.telemetry_records where source_line = 2"
                                   ).fetchall()[0][0]
    # the two files' records: 941 SkyPilot records (494 lines, GCP-style host rows doubled), 336 telemetry runs
    assert sorted(records.values()) == [336, 941]
    con = connect(path)  # migrates
    try:
        tables = con.sql("select table_name from duckdb_tables() where schema_name = 'raw'").fetchall()
        assert ("price_records",) not in tables and ("telemetry_records",) not in tables
        assert _checksums(con, columns) == before  # core, quarantine and the registry unchanged but for the new column
        folder = landing.landing_dir(con)
        for sha, landed_path in con.sql("select content_sha256, landed_path from raw.ingested_files").fetchall():
            assert landed_path == f"{sha[:2]}/{sha}.records.jsonl.zst"
            file = str(folder / landed_path)
            assert con.sql("select count(*) from read_json(?, compression = 'zstd')", params=[file]
                           ).fetchall()[0][0] == records[sha]
        # every core row finds its record in its unit's landed file, by (content_sha256, source_line)
        [(sha, landed_path)] = con.sql("select content_sha256, landed_path from raw.ingested_files "
                                       "where dataset = 'telemetry'").fetchall()
        landed = con.sql("select source_line, to_json(raw_values)::varchar as raw_values "
                         "from read_json(?, compression = 'zstd')", params=[str(folder / landed_path)])
        missing = con.sql("select count(*) from core.telemetry_runs r anti join landed l using (source_line) "
                          "where r.content_sha256 = ?", params=[sha]).fetchall()[0][0]
        assert missing == 0
        assert landed.filter("source_line = 2").fetchall()[0][1] == record_of_line_2
    finally:
        con.close()
    # once: connecting again changes nothing
    with connect(path) as again:
        assert _checksums(again, columns) == before


def test_a_migration_that_fails_changes_nothing(old_warehouse: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = _copy(old_warehouse, tmp_path)
    real_execute = landing_zone.execute

    def failing(con, name, params=None):
        if name == "migrations/drop_raw_record_tables":
            raise duckdb.IOException("injected: the disk went away")
        return real_execute(con, name, params)

    monkeypatch.setattr(landing_zone, "execute", failing)
    with pytest.raises(duckdb.IOException, match="injected"):
        connect(path)
    monkeypatch.setattr(landing, "execute", real_execute)
    with duckdb.connect(str(path)) as con:
        tables = con.sql("select table_name from duckdb_tables() where schema_name = 'raw' "
                         "and table_name like '%records' order by 1").fetchall()
        assert tables == [("price_records",), ("telemetry_records",)]
        assert con.sql("select count(landed_path) from raw.ingested_files").fetchall() == [(0,)]
        # the files the rolled-back migration landed are named by no registry row: recovery removes them
        folder = path.parent / "landing"
        assert len(landing.recover(con, folder)) == 2
        assert list(landing.landed_files(folder)) == []
