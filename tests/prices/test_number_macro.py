"""The DuckDB adapters' comma rule (sql/prices/number_macros.sql) gives the polars adapters' answers
(tasks/prices/numbers.py) on every kind of text, the pattern run only where the text holds a comma."""

from __future__ import annotations

import duckdb
import pytest

from tasks.prices.numbers import comma_value_reason
from tasks.warehouse import execute

TEXTS = ["3,67", " 1,234.5 ", "+3,67", "-0,5", "1,234,567", "3.67", "1e-3", "", "   ", "a,b", "1,", ",5", "3,67x",
         "1,2,3.", "NaN"]


@pytest.mark.parametrize("text", [*TEXTS, None])
def test_comma_number_reason_matches_the_polars_rule(text: str | None) -> None:
    con = duckdb.connect()
    execute(con, "prices/number_macros")
    (reason,) = con.execute("select comma_number_reason('price', $text)", {"text": text}).fetchone() or (None,)
    assert reason == (comma_value_reason("price", text) if text is not None else None)


def test_comma_number_reason_by_hand() -> None:
    con = duckdb.connect()
    execute(con, "prices/number_macros")
    got = dict(con.execute("select t, comma_number_reason('price', t) from unnest(['3,67', '3.67', 'a,b', ' 1,234.5 '])"
                           " as u(t)").fetchall())
    assert got["3.67"] is None and got["a,b"] is None  # no comma; a comma but not a number
    assert got["3,67"].startswith("price 3,67 has a comma: a decimal comma or a thousands separator")
    assert got[" 1,234.5 "].startswith("price 1,234.5 has a comma")  # trimmed in the message
