"""`python -m bench.compare_published BEFORE.duckdb AFTER.duckdb [COLUMN,...]`: are two published databases the
same? Every table and view of both: the same columns in the same order, the same row count, and no row in one that
is not in the other (EXCEPT ALL both ways, so duplicates count). The columns named (default: the clocks of a
`gpucost run`: published_at, ingested_at, observed_at, last_quarantined_at, and the MLflow run's run_id and
created_at) are left out; `metrics` is compared without the fit's `wall_seconds`. Exit 0 when every table is the
same."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

SQL_DIR = Path(__file__).parent / "sql"

CLOCKS = ("published_at", "ingested_at", "observed_at", "last_quarantined_at", "run_id", "created_at")


def relations(con: duckdb.DuckDBPyConnection, db: str) -> set[str]:
    rows = con.execute("select table_name from duckdb_tables() where database_name = $db union "
                       "select view_name from duckdb_views() where database_name = $db and not internal",
                       {"db": db}).fetchall()
    return {r[0] for r in rows}


def columns(con: duckdb.DuckDBPyConnection, db: str, table: str) -> list[str]:
    return [r[0] for r in con.execute("select column_name from duckdb_columns() where database_name = $db and "
                                      "table_name = $t order by column_index", {"db": db, "t": table}).fetchall()]


def count(con: duckdb.DuckDBPyConnection, name: str, parameters: dict[str, object]) -> int:
    """The row_count of bench/sql/NAME.sql with its parameters bound."""
    ((rows,),) = con.execute((SQL_DIR / f"{name}.sql").read_text(encoding="utf-8"), parameters).fetchall()
    return int(rows)


def compare(before: str, after: str, left_out: tuple[str, ...] = CLOCKS) -> bool:
    con = duckdb.connect()
    con.execute("attach $p as a (read_only)", {"p": before})
    con.execute("attach $p as b (read_only)", {"p": after})
    ta, tb = relations(con, "a"), relations(con, "b")
    same = ta == tb
    if not same:
        print(f"only in {before}: {sorted(ta - tb)}; only in {after}: {sorted(tb - ta)}")
    for table in sorted(ta & tb):
        cols_a, cols_b = columns(con, "a", table), columns(con, "b", table)
        names = {db: f"{db}.{table}" for db in ("a", "b")}  # identifiers, bound as values to query_table
        counts = [count(con, "compare_row_count", {"relation": names[db]}) for db in ("a", "b")]
        left = [*left_out, "metrics"]  # metrics apart: without the fit's wall_seconds
        extra = [count(con, "compare_rows_only_in_first", {"first": names[x], "second": names[y], "left_out": left})
                 + (count(con, "compare_metrics_only_in_first", {"first": names[x], "second": names[y]})
                    if "metrics" in cols_a and "metrics" in cols_b else 0)
                 for x, y in (("a", "b"), ("b", "a"))]
        equal = cols_a == cols_b and counts[0] == counts[1] and extra == [0, 0]
        same &= equal
        print(f"{table}: rows {counts[0]:,} / {counts[1]:,}; {len(cols_a)} / {len(cols_b)} columns, same order "
              f"{cols_a == cols_b}; rows only in one: {extra[0]} / {extra[1]}; left out "
              f"{sorted(set(left_out) & set(cols_a))}: {'identical' if equal else 'DIFFERENT'}")
    return same


if __name__ == "__main__":
    names = tuple(sys.argv[3].split(",")) if len(sys.argv) > 3 else CLOCKS
    raise SystemExit(0 if compare(sys.argv[1], sys.argv[2], names) else 1)
