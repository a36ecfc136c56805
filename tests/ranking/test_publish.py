"""Publishing: atomic swap under a reader, a publish killed midway, duckdb-cli compatibility, comments."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import polars as pl

from tasks.publishing.artifacts import pareto_front
from tasks.publishing.database import PUBLISHED_TABLES
from tasks.publishing.night import publish_night
from tasks.settings import PROJECT_ROOT
from tests import configured
from tests.ranking.conftest import FixedThroughput

PYTHON = sys.executable
DUCKDB_CLI = Path(sys.executable).with_name("duckdb")


def night(con, day: int, target: Path):
    return publish_night(con, FixedThroughput(), date(2026, 1, day), datetime(2026, 1, day, 2, tzinfo=UTC),
                         configured.resources(published=target), **configured.night())


def nights_in(path: Path) -> list[date]:
    with duckdb.connect(str(path), read_only=True) as db:
        found = db.sql("select distinct publish_date from gpu_cost_ranking_history order by 1").fetchall()
    return [r[0] for r in found]


def test_publish_builds_every_table_commented(aws_prices, gpucost_home):
    target = gpucost_home / "published.duckdb"
    outcome = night(aws_prices, 6, target)
    assert set(outcome.published.rows) == set(PUBLISHED_TABLES)
    # AWS sample: 941 records read, 9 quarantined (no price) -> 932 observations; prices_current is the same 932
    assert outcome.published.rows["prices_current"] == 932
    assert outcome.published.rows["price_history"] == 932
    # 5 shipped workloads x 932 offers x 2 cluster choices
    assert outcome.published.rows["gpu_cost_ranking"] == 2 * 5 * 932
    assert outcome.chart is not None and outcome.chart.exists() and outcome.chart.parent == target.parent
    with duckdb.connect(str(target), read_only=True) as db:
        uncommented = db.sql("select table_name, column_name from duckdb_columns() where not internal"
                             " and (comment is null or comment = '')").fetchall()
        tables = db.sql("select table_name from duckdb_tables() where comment is null or comment = ''").fetchall()
        # the history's column comments are the ranking's (one list in sql/publish/comments.csv, copied),
        # including one with a quote in it: "workload's deadline in hours (null = none)"
        described = {table: dict(db.sql("select column_name, comment from duckdb_columns() where table_name = $t",
                                        params={"t": table}).fetchall())
                     for table in ("gpu_cost_ranking", "gpu_cost_ranking_history", "prices_current", "price_history")}
    assert uncommented == [] and tables == []
    assert described["gpu_cost_ranking_history"] == described["gpu_cost_ranking"]
    # price_history: prices_current's columns with their comments (written once), and its own spot columns
    shared = {c: t for c, t in described["price_history"].items() if c in described["prices_current"]}
    assert shared == described["prices_current"] and len(shared) == 26
    assert described["price_history"]["spot_window_observations"] == "spot rows: observations in the window (count)"
    assert described["gpu_cost_ranking_history"]["deadline_hours"] == "workload's deadline in hours (null = none)"
    assert not list(target.parent.glob(".published.duckdb.*"))


def test_history_keeps_every_night(aws_prices, gpucost_home):
    target = gpucost_home / "published.duckdb"
    night(aws_prices, 6, target)
    night(aws_prices, 7, target)
    night(aws_prices, 7, target)  # re-publishing a night replaces it
    assert nights_in(target) == [date(2026, 1, 6), date(2026, 1, 7)]
    with duckdb.connect(str(target), read_only=True) as db:
        assert db.sql("select distinct publish_date from gpu_cost_ranking").fetchall() == [(date(2026, 1, 7),)]


def test_spec_source_kept_once_per_gpu_and_shown_on_every_published_row(aws_prices, gpucost_home):
    target = gpucost_home / "published.duckdb"
    night(aws_prices, 6, target)
    # a night written before the spec sources were kept apart: its rows carry their source themselves
    aws_prices.execute("update marts.gpu_cost_ranking_history set gpu_spec_source = 'kept in the row' "
                       "where publish_date = '2026-01-06'")
    aws_prices.execute("delete from marts.gpu_cost_ranking_gpu_specs where publish_date = '2026-01-06'")
    night(aws_prices, 7, target)
    # tonight's warehouse rows carry no source text; one row per GPU of core.gpu_specs holds it
    assert aws_prices.sql("select count(*) from marts.gpu_cost_ranking_history where publish_date = '2026-01-07' "
                          "and gpu_spec_source is not null").fetchall() == [(0,)]
    assert aws_prices.sql("select count(*) from marts.gpu_cost_ranking_gpu_specs where publish_date = '2026-01-07'"
                          ).fetchall() == aws_prices.sql("select count(*) from core.gpu_specs").fetchall()
    with duckdb.connect(str(target), read_only=True) as db:
        tonight = db.sql("select count(*), count(r.gpu_spec_source), "
                         "count(*) filter (where r.gpu_spec_source is distinct from s.source) "
                         "from gpu_cost_ranking r left join gpu_specs s using (gpu)").fetchall()
        earlier = db.sql("select distinct gpu_spec_source from gpu_cost_ranking_history "
                         "where publish_date = '2026-01-06'").fetchall()
        kind = db.sql("select count(*) from duckdb_views() where view_name = 'gpu_cost_ranking'").fetchall()
    # 5 shipped workloads x 932 AWS offers x 2 choices, every one with its GPU's spec source (AWS's GPUs all have a
    # spec row), none different from the published gpu_specs row
    assert tonight == [(2 * 5 * 932, 2 * 5 * 932, 0)]
    assert earlier == [("kept in the row",)]
    assert kind == [(1,)]   # tonight's ranking is a view of the history: its rows are stored once


READER = textwrap.dedent(
    """
    import sys, duckdb
    db = duckdb.connect(sys.argv[1], read_only=True)
    q = "select count(distinct publish_date) from gpu_cost_ranking_history"
    print(db.execute(q).fetchall()[0][0], flush=True)
    sys.stdin.readline()
    print(db.execute(q).fetchall()[0][0], flush=True)
    """
)


def test_publish_succeeds_while_a_reader_holds_the_file(aws_prices, gpucost_home):
    target = gpucost_home / "published.duckdb"
    night(aws_prices, 6, target)
    reader = subprocess.Popen([PYTHON, "-c", READER, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert reader.stdout.readline().strip() == "1"
        night(aws_prices, 7, target)  # the reader holds the old file open (and its lock)
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == "1"  # its snapshot: still one night
    finally:
        reader.communicate(timeout=30)
    assert nights_in(target) == [date(2026, 1, 6), date(2026, 1, 7)]  # a new connection sees the new night


KILLED = textwrap.dedent(
    """
    import os, sys, time
    from datetime import UTC, date, datetime
    from pathlib import Path
    import tasks.publishing.database as database
    from tasks.warehouse import connect
    from tasks.publishing.night import publish_night
    sys.path.insert(0, sys.argv[3])
    from tests.ranking.conftest import FixedThroughput
    from tests import configured

    real_query = database.query
    def query(con, name, params=None):
        if name == "publish/comment_statements":  # tables written, file not finished: stop here and wait to be killed
            Path(sys.argv[2]).write_text("midway")
            time.sleep(120)
        return real_query(con, name, params)
    database.query = query
    con = connect(Path(sys.argv[1]))
    publish_night(con, FixedThroughput(), date(2026, 1, 7), datetime(2026, 1, 7, 2, tzinfo=UTC),
                  configured.resources(published=Path(sys.argv[4])), **configured.night())
    """
)


def test_publish_killed_midway_leaves_the_previous_file(aws_prices, gpucost_home, tmp_path):
    target = gpucost_home / "published.duckdb"
    night(aws_prices, 6, target)
    before = target.read_bytes()
    warehouse = gpucost_home / "warehouse.duckdb"
    aws_prices.close()  # the child needs the warehouse (one writer at a time)
    marker = tmp_path / "midway"
    child = subprocess.Popen([PYTHON, "-c", KILLED, str(warehouse), str(marker), str(PROJECT_ROOT), str(target)],
                             cwd=PROJECT_ROOT, env={**os.environ})
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None, "publish ended before reaching the midway point"
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert list(target.parent.glob(".published.duckdb.*.tmp"))  # the half-built file exists
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert target.read_bytes() == before
    assert nights_in(target) == [date(2026, 1, 6)]
    # the next publish clears the leftover and succeeds
    from tasks.warehouse import connect

    with connect(warehouse) as con:
        night(con, 8, target)
    # night 7's ranking reached the warehouse history before the kill (only the file build was cut short)
    assert nights_in(target) == [date(2026, 1, 6), date(2026, 1, 7), date(2026, 1, 8)]
    assert not list(target.parent.glob(".published.duckdb.*"))


def test_published_file_opens_in_duckdb_cli(aws_prices, gpucost_home):
    target = gpucost_home / "published.duckdb"
    night(aws_prices, 6, target)
    assert DUCKDB_CLI.exists(), "duckdb-cli is a dev dependency (pip install duckdb-cli)"
    done = subprocess.run(
        [str(DUCKDB_CLI), "-readonly", "-csv", "-noheader", str(target), "-c",
         "select count(*) from gpu_cost_ranking where workload = '8b-qlora-100m' and cluster_choice = 'cheapest'"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "932"  # one row per AWS sample offer for this workload


def test_pareto_front_by_hand():
    # (hours, usd): (1, 9) front; (2, 5) front; (3, 6) beaten by (2, 5); (4, 1) front; (4, 2) tie on hours, dearer
    points = pl.DataFrame({"expected_hours": [3.0, 1.0, 4.0, 2.0, 4.0], "usd_per_mtoken": [6.0, 9.0, 2.0, 5.0, 1.0]})
    assert pareto_front(points).to_list() == [False, True, False, True, True]
