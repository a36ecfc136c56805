"""Numbers as price lists write them, for the adapters that read with polars or Python (the DuckDB adapters call
the macro `comma_number_reason`, sql/prices/number_macros.sql: same pattern, same words).

Text is read as a plain decimal number with a point ("3.67", "1e-3"). A number written with a comma ("3,67",
"1,234.5") is not read: a decimal comma and a thousands separator cannot be told apart, so the row is
quarantined with the reason below, never misread.
"""

from __future__ import annotations

import re

import polars as pl

COMMA_NUMBER = r"^[+-]?[0-9][0-9,]*,[0-9]+(\.[0-9]*)?$"
COMMA_MESSAGE = ("{field} {text} has a comma: a decimal comma or a thousands separator, which cannot be told apart; "
                 "write the {field} with a point and no separator (e.g. 3.67)")


def number(text: pl.Expr) -> pl.Expr:
    """Text (or a number) -> Float64; null when it is not a plain number (a comma included: `comma_reason`)."""
    return text.cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)


def comma_reason(fields: dict[str, pl.Expr]) -> pl.Expr:
    """The quarantine reason for the first of `fields` (name -> its text) written with a comma, else null."""
    reasons = []
    for field, value in fields.items():
        text = value.cast(pl.String).str.strip_chars()
        reasons.append(pl.when(text.str.contains(COMMA_NUMBER))
                       .then(pl.format(COMMA_MESSAGE.format(field=field, text="{}"), text)))
    return pl.coalesce(reasons)


def comma_value_reason(field: str, value: object) -> str | None:
    """`comma_reason` for one value read from JSON (a string where a number belongs)."""
    if isinstance(value, str) and re.match(COMMA_NUMBER, value.strip()):
        return COMMA_MESSAGE.format(field=field, text=value.strip())
    return None
