"""Value conversions the datasets' readers and the telemetry contract share (no ingest state: the registered
model carries this module)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl


def per_distinct(text: pl.Series, convert: Callable[[str], Any], dtype: pl.DataType) -> pl.Series:
    """`convert` applied to each distinct non-null text once (values repeat), mapped back to every row.

    In Python, before polars runs - never as a polars UDF (map_elements): a UDF runs on polars' thread pool and
    needs the GIL, while another thread's polars call (to_pandas in the GX cross-check) can hold the GIL waiting
    for that pool; the thread-pool ingest deadlocked so."""
    distinct = text.drop_nulls().unique()
    mapping = pl.DataFrame(
        {"text": distinct, "value": pl.Series([convert(t) for t in distinct.to_list()], dtype=dtype)},
        schema={"text": pl.String, "value": dtype},
    )
    values = pl.DataFrame({"text": text.cast(pl.String)}).join(mapping, on="text", how="left", maintain_order="left")
    return values["value"].rename(text.name)
