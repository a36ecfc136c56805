"""The DuckDB floors: the least work a DuckDB-based step could do with the same input (bench/sql/*.sql)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from bench.common import timed

SQL_DIR = Path(__file__).parent / "sql"


def floor_sql(name: str) -> str:
    return (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8")


def load_file(path: str, database: str) -> dict[str, Any]:
    """DuckDB reads the file into a table of a fresh database file (a measured step)."""
    Path(database).unlink(missing_ok=True)
    con = duckdb.connect(database)
    statement = "load_parquet" if path.endswith(".parquet") else "load_offer_csv" if "aws_offer" in path else "load_csv"
    with timed() as t:
        con.execute(floor_sql(statement), {"path": path})
        con.execute("checkpoint")
    rows = con.execute("select count(*) from floor_load").fetchone()[0]
    con.close()
    Path(database).unlink(missing_ok=True)
    return {"seconds": t["s"], "rows": rows}


def load_offer_csv(path: str, database: str) -> dict[str, Any]:
    """DuckDB reads an AWS offer CSV (after its preamble) into a table of a fresh database (a measured step)."""
    Path(database).unlink(missing_ok=True)
    con = duckdb.connect(database)
    with timed() as t:
        con.execute(floor_sql("load_offer_csv"), {"path": path})
        con.execute("checkpoint")
    rows = con.execute("select count(*) from floor_load").fetchone()[0]
    con.close()
    Path(database).unlink(missing_ok=True)
    return {"seconds": t["s"], "rows": rows}


STORE_STEPS = {
    "skypilot": ("store_floor_read_csv", "store_floor_skypilot_raw", "store_floor_skypilot_offers"),
    "telemetry": ("store_floor_read_typed_csv", "store_floor_telemetry_raw", "store_floor_telemetry_runs"),
}


def store_file(path: str, database: str, kind: str) -> dict[str, Any]:
    """The store floor (a measured step): DuckDB writes what the ingest of `path` must keep - the file read once,
    one raw JSON record per stored row, the typed rows - in one transaction of a fresh database file, with none
    of the ingest's lookups, checks, history or quarantine. `kind`: skypilot | telemetry."""
    Path(database).unlink(missing_ok=True)
    con = duckdb.connect(database)
    con.execute(floor_sql("store_floor_tables"))
    steps = STORE_STEPS[kind]
    if path.endswith(".parquet"):
        steps = ("store_floor_read_parquet", *steps[1:])
    with timed() as t:
        con.execute("begin")
        for step in steps:
            con.execute(floor_sql(step), {"path": path})
        con.execute("commit")
        con.execute("checkpoint")
    rows = con.execute("select count(*) from floor_raw").fetchone()[0]
    con.close()
    Path(database).unlink(missing_ok=True)
    return {"seconds": t["s"], "rows": rows}
