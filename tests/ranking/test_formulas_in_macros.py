"""The README says every formula of the cost model lives in sql/ddl/070_marts_cost_model.sql: the ranking
SQL (sql/marts/insert_ranking.sql and the per-batch tables it reads: ranking_terms, ranking_rungs, ranking_picked)
only calls those macros. Checked on DuckDB's own parse of the SQL."""

from __future__ import annotations

import json
from typing import Any

import duckdb

from tasks.settings import SQL_DIR

# The cost terms of a ranking row (README "Workloads and the cost model"): each one a macro's result.
COST_TERMS = {
    "hours_to_finish", "compute_usd", "interruption_rate_per_hour", "expected_interruptions",
    "lost_hours_per_interruption", "expected_hours", "expected_compute_usd", "utilisation_of_tdp", "pue",
    "billed_usd_per_kwh", "energy_kwh", "energy_usd", "expected_total_usd", "total_usd_at_high",
    "total_usd_at_low", "usd_per_mtoken", "usd_per_mtoken_low", "usd_per_mtoken_high", "checkpoint_storage_usd",
    "billed_term_hours", "break_even_hours", "memory_per_gpu_gb", "is_owned",
}
ARITHMETIC = {"+", "-", "*", "/", "//", "%", "^", "**"}


def _select_items(node: Any) -> list[dict[str, Any]]:
    """Every aliased select-list expression anywhere in the parse tree (CTEs included)."""
    found = []
    if isinstance(node, dict):
        for item in node.get("select_list", []):
            if item.get("alias"):
                found.append(item)
        for value in node.values():
            found += _select_items(value)
    elif isinstance(node, list):
        for value in node:
            found += _select_items(value)
    return found


def _inline_arithmetic(node: Any) -> list[str]:
    """Arithmetic operators in an expression, not counting what is passed into a marts.* macro."""
    if isinstance(node, list):
        return [op for value in node for op in _inline_arithmetic(value)]
    if not isinstance(node, dict):
        return []
    if node.get("class") == "FUNCTION" and node.get("schema") == "marts":
        return []
    own = [node["function_name"]] if node.get("function_name") in ARITHMETIC else []
    return own + [op for value in node.values() for op in _inline_arithmetic(value)]


# The ranking's SQL: the insert of the rows and the per-batch tables holding the terms it shares with the choice of
# cluster size (tasks/ranking/rank.py).
RANKING_SQL = ("insert_ranking", "ranking_terms", "ranking_rungs", "ranking_picked")


def ranking_sql(replace: dict[str, str] | None = None) -> dict[str, str]:
    texts = {name: (SQL_DIR / "marts" / f"{name}.sql").read_text(encoding="utf-8") for name in RANKING_SQL}
    return {name: text.replace(*next(iter(replace.items()))) if replace else text for name, text in texts.items()}


def inline_cost_terms(sqls: dict[str, str]) -> dict[str, list[str]]:
    terms: dict[str, list[str]] = {}
    for sql in sqls.values():
        body = sql[sql.index("\nwith ") + 1:]  # the SELECT of the INSERT / CREATE (json_serialize_sql parses SELECTs)
        with duckdb.connect() as con:
            tree = json.loads(con.sql("select json_serialize_sql($s)", params={"s": body}).fetchall()[0][0])
        assert not tree["error"], tree
        for item in _select_items(tree["statements"]):
            terms.setdefault(item["alias"], []).extend(_inline_arithmetic(item))
    assert set(terms) >= COST_TERMS, COST_TERMS - set(terms)  # every term is found where it is defined
    return {name: ops for name, ops in terms.items() if name in COST_TERMS and ops}


def test_the_ranking_computes_every_cost_term_with_the_070_macros() -> None:
    assert inline_cost_terms(ranking_sql()) == {}


def test_an_inline_formula_is_caught() -> None:
    inlined = ranking_sql({"marts.expected_interruptions(instances, interruption_rate_per_hour, hours_to_finish)":
                           "instances * interruption_rate_per_hour * hours_to_finish"})
    assert inlined != ranking_sql()
    assert inline_cost_terms(inlined) == {"expected_interruptions": ["*", "*"]}
