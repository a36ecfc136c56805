"""Dates as dated price lists write them (price histories, AWS spot history), for the polars adapters.

A row of a dated list is an observation at its date. A row whose date cannot be read is quarantined with the
reason below, never stored: the ingest would otherwise date it when it was ingested (sql/prices/normalise.sql
dates undated rows of undated lists, the current price lists, that way), and an old price would become tonight's.
"""

from __future__ import annotations

import polars as pl

UNDATED_MESSAGE = "{field} {text} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS, UTC): the row's price has no date"
EMPTY_MESSAGE = "{field} is empty: the row's price has no date"


def undated_reason(field: str, text: pl.Expr, parsed: pl.Expr) -> pl.Expr:
    """The quarantine reason of a row whose date `text` did not parse (`parsed` is null), else null."""
    stripped = text.cast(pl.String).str.strip_chars()
    return (
        pl.when(parsed.is_not_null()).then(None)
        .when(stripped.fill_null("").str.len_chars() == 0).then(pl.lit(EMPTY_MESSAGE.format(field=field)))
        .otherwise(pl.format(UNDATED_MESSAGE.format(field=field, text="'{}'"), stripped))
    )
