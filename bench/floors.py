"""The DuckDB floors: the least work a DuckDB-based step could do with the same input (bench/sql/*.sql)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
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


def store_steps(path: str, kind: str) -> tuple[str, ...]:
    """The store floor's statements for `path` (`kind`: skypilot | telemetry): a CSV file is read once into a
    table in file order (its rowid is the line), whose rows are then stored with no order (as the ingest stores);
    a Parquet file gives its row numbers itself."""
    if kind == "skypilot":
        return ("store_floor_read_csv", "store_floor_skypilot")
    if path.endswith(".parquet"):
        return ("store_floor_telemetry_parquet",)
    return ("store_floor_read_csv", "store_floor_telemetry_csv")


def store_file(path: str, database: str, kind: str) -> dict[str, Any]:
    """The store floor (a measured step): the least any ingest of `path` under issue 25's raw layer does. Land
    the file as the pipeline does (tasks/ingest/landing.py: one read for its sha256 and a zstd copy, fsynced and
    renamed into place), then in ONE transaction read the file once and insert the typed rows with their lineage
    (the landed file's sha256, the line), commit and checkpoint, in a fresh database file. None of the
    ingest's lookups, checks, history, record hash or quarantine. `kind`: skypilot | telemetry."""
    from tasks.ingest.landing import land_part, read_into_part

    Path(database).unlink(missing_ok=True)
    landing = Path(f"{database}.landing")
    shutil.rmtree(landing, ignore_errors=True)
    con = duckdb.connect(database)
    if kind == "skypilot":
        con.execute(floor_sql("store_floor_tables"))
    con.execute("checkpoint")
    with timed() as t:
        landed = land_part(read_into_part(Path(path), landing), landing)
        con.execute("begin transaction")
        steps = store_steps(path, kind)
        for step in steps:
            if step == steps[-1]:  # the stored rows carry their line: their order is free (as the ingest's)
                con.execute("set preserve_insertion_order = false")
            text = floor_sql(step)
            params = {"path": path, "sha256": landed.sha256, "ingested_at": datetime.now(UTC)}
            con.execute(text, {name: value for name, value in params.items() if f"${name}" in text})
        con.execute("commit")
        con.execute("checkpoint")
    count = "select count(*) from floor_offers" if kind == "skypilot" else "select count(*) from floor_runs"
    rows = con.execute(count).fetchone()[0]
    con.close()
    landed_mb = (landing / landed.landed_path).stat().st_size / 1e6
    Path(database).unlink(missing_ok=True)
    shutil.rmtree(landing, ignore_errors=True)
    return {"seconds": t["s"], "cpu_s": t["cpu_s"], "rows": rows, "landed_mb": landed_mb}
