"""`gpucost predict` takes rows within the same physical bounds as the telemetry ingest (config/telemetry.toml
[validation]): a row outside them (1e9 GPUs, 1e-300 B parameters, a negative micro-batch) is not sent to the
model, whose arithmetic would only extrapolate nonsense; it is returned unscored with the reason."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from tasks.contract.schema import TelemetryValidation, outside_bounds

ROW = "_predict_row"


def out_of_bounds(rows: pl.DataFrame, validation: TelemetryValidation) -> pl.Series:
    """Per row, why it is outside the bounds ("; "-joined), or null. A value that is not a number is left to the
    model's own reading (it names unreadable values itself)."""
    reasons = []
    for column, (low, high) in validation.column_bounds().items():
        if column not in rows.columns:
            continue
        value = pl.col(column).cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)
        template = outside_bounds(column, "{}", low, high)
        reasons.append(pl.when(value.is_not_null() & (value.is_nan() | (value < low) | (value > high)))
                       .then(pl.format(template, pl.col(column).cast(pl.String)))
                       .otherwise(None))
    if not reasons:
        return pl.Series("reason", [None] * rows.height, dtype=pl.String)
    joined = pl.concat_str(reasons, separator="; ", ignore_nulls=True)
    return rows.select(pl.when(joined != "").then(joined).alias("reason")).to_series()  # none: null, not ''


def score_within_bounds(rows: pl.DataFrame, validation: TelemetryValidation,
                        score: Callable[[pl.DataFrame], pl.DataFrame],
                        output_columns: tuple[str, ...], reason_column: str) -> pl.DataFrame:
    """`score(rows)` on the rows within bounds; the others come back in place, unscored, with the reason."""
    reasons = out_of_bounds(rows, validation)
    if reasons.null_count() == rows.height:
        return score(rows)
    numbered = rows.with_row_index(ROW)
    inside = numbered.filter(reasons.is_null())
    scored = score(inside.drop(ROW)).with_columns(inside[ROW])
    outside = numbered.filter(reasons.is_not_null()).with_columns(reasons.filter(reasons.is_not_null())
                                                                  .alias(reason_column))
    outside = outside.with_columns(*[pl.lit(None).alias(c) for c in output_columns if c not in outside.columns])
    outside = outside.select(scored.columns).cast(scored.schema)
    return pl.concat([scored, outside]).sort(ROW).drop(ROW)
