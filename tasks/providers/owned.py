"""GPUs you own (format `owned`): one CSV row per site and GPU model, priced as an amortised
hourly cost so that they rank beside cloud offers. Columns:

| column | required | meaning |
|---|---|---|
| site | yes | where the GPUs are (becomes `region`) |
| gpu | yes | GPU name, any spelling in data/reference/gpu_aliases.csv |
| gpu_count | yes | GPUs per node (the unit you would rent: `usd_per_hour` is for the node) |
| usd_per_gpu_hour_amortised | yes | hardware + hosting cost per GPU-hour, without electricity (USD) |
| electricity_usd_per_kwh | no | what power costs at the site (USD per kWh, to max_electricity_usd_per_kwh) |
| pue | no | power usage effectiveness of the site (1.0 = no cooling overhead, to max_pue) |
| instance_type | no | a name for the node; default `owned-<gpu_count>x<gpu>` |
| observed_at | no | when the figures were set (ISO date); default the ingest time |

Rows are `on_demand` (the GPUs are there whenever you want them). Energy is NOT in `usd_per_hour`:
`electricity_usd_per_kwh` and `pue` are carried to core.price_observations so that a ranking can add
energy = GPU power x hours x PUE x price per kWh. A row whose electricity price or PUE is given but is not a finite
number, or is out of its bounds (config/settings.toml [validation.prices]), is quarantined with the reason (a `nan`
would rank with a `nan` cost).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tasks.prices.adapter import AdapterContext, AdapterResult, conform, frame_reader, read_csv_text, require_columns
from tasks.prices.numbers import comma_reason, number
from tasks.providers.provider import Provider

REQUIRED = ("site", "gpu", "gpu_count", "usd_per_gpu_hour_amortised")


def _num(column: str) -> pl.Expr:
    return number(pl.col(column))


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    frame = read_csv_text(path, comment_prefix="#")
    text_lines = path.read_text(encoding="utf-8").splitlines()
    header_line = 1 + next((i for i, line in enumerate(text_lines) if not line.startswith("#")), 0)
    require_columns(frame, REQUIRED, path, "an owned-GPU price file")
    for optional in ("electricity_usd_per_kwh", "pue", "instance_type", "observed_at"):
        if optional not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.String).alias(optional))
    frame = frame.with_columns(
        source_line=pl.int_range(header_line + 1, header_line + 1 + pl.len(), dtype=pl.Int64),  # after comments
        raw_values=pl.struct(pl.all()).struct.json_encode(),
    )
    gpu_count = _num("gpu_count")
    records = frame.with_columns(
        provider=pl.lit(context.provider),
        region=pl.col("site").str.strip_chars(),
        zone=pl.lit(None, pl.String),
        instance_type=pl.coalesce(
            pl.col("instance_type").str.strip_chars().replace("", None),
            pl.format("owned-{}x{}", gpu_count.cast(pl.Int64, strict=False), pl.col("gpu").str.strip_chars()),
        ),
        gpu_name=pl.col("gpu").str.strip_chars(),
        gpu_count=gpu_count,
        pricing=pl.lit("on_demand"),
        usd_per_hour=_num("usd_per_gpu_hour_amortised") * gpu_count,
        currency=pl.lit("USD"),
        observed_at=pl.col("observed_at").str.strip_chars().str.to_datetime(time_zone="UTC", strict=False),
        electricity_usd_per_kwh=_num("electricity_usd_per_kwh"),
        pue=_num("pue"),
        rejected_reason=pl.coalesce(comma_reason({
            "usd_per_gpu_hour_amortised": pl.col("usd_per_gpu_hour_amortised"), "gpu_count": pl.col("gpu_count"),
            "electricity_usd_per_kwh": pl.col("electricity_usd_per_kwh"), "pue": pl.col("pue")}),
            site_figure_reason("pue", 1.0, "PUE below 1 is impossible (facility power cannot be less than IT power)",
                               "max_pue", context.validation.max_pue),
            site_figure_reason("electricity_usd_per_kwh", 0.0, "electricity price must not be negative",
                               "max_electricity_usd_per_kwh", context.validation.max_electricity_usd_per_kwh,
                               " (a price per MWh?)")),
    )
    return AdapterResult(records=conform(records))


def site_figure_reason(column: str, low: float, below: str, limit: str, high: float, hint: str = "") -> pl.Expr:
    """Why a site's optional figure (`column`) cannot be used, else null: given but not a finite number (`nan`, `inf`,
    text), below `low` (`below` says why), or above `high` (config/settings.toml [validation.prices] `limit`)."""
    text = pl.col(column).str.strip_chars()
    value = _num(column)
    return (
        pl.when(text.is_not_null() & (text != "") & ~value.is_finite().fill_null(False))
        .then(pl.format(f"{column} {{}} is not a finite number", text))
        .when(value < low).then(pl.lit(below))
        .when(value > high)
        .then(pl.format(f"{column} {{}} is above {limit} = {high:g} (config/settings.toml [validation.prices]){hint}",
                        text))
        .otherwise(None)
    )


PROVIDER = Provider("owned", formats={"owned": frame_reader(parse)})
