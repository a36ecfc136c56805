"""From an adapter's records to the normalised price shape: canonical GPU, price per GPU-hour,
file identity. The per-GPU price is computed here and nowhere else, and GPU names that one alias
cannot settle (the same 'A100' string on a 40 GB PCIe and a 40 GB SXM part) are settled here, once,
by instance type (data/reference/gpu_instance_overrides.csv)."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from tasks.prices.adapters import reference_table
from tasks.reference import resolve_gpu
from tasks.validation import ROW_KEY

OVERRIDES_FILE = "gpu_instance_overrides.csv"

STAGED_COLUMNS = (
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpu_name",
    "gpu_count",
    "gpu_memory_gb",
    "vcpus",
    "memory_gb",
    "pricing",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "currency",
    "observed_at",
    "electricity_usd_per_kwh",
    "pue",
    "source_file",
    "source_line",
    "content_sha256",
    "ingested_at",
    "rejected_reason",
)


def usd_per_gpu_hour(usd_per_hour: pl.Expr, gpu_count: pl.Expr) -> pl.Expr:
    """USD per GPU-hour = USD per instance-hour / GPUs per instance (null where the count is not positive)."""
    return pl.when(gpu_count > 0).then(usd_per_hour / gpu_count).otherwise(None)


def read_overrides() -> pl.DataFrame:
    """provider, instance_type_pattern (regex, whole name), gpu (canonical), gpu_count (optional), note."""
    table = reference_table(OVERRIDES_FILE)
    return table.with_columns(gpu_count=pl.col("gpu_count").cast(pl.Float64, strict=False))


def apply_instance_overrides(frame: pl.DataFrame, overrides: pl.DataFrame) -> pl.DataFrame:
    """Set `gpu` (and `gpu_count` where given) for the offers an override pattern names; first match wins."""
    if overrides.height == 0 or frame.height == 0:
        return frame
    gpu_expr: pl.Expr = pl.col("gpu")
    count_expr: pl.Expr = pl.col("gpu_count")
    # Built back to front so that the first matching row of the table decides.
    for row in reversed(overrides.to_dicts()):
        matches = (pl.col("provider") == row["provider"]) & pl.col("instance_type").str.contains(
            f"^(?:{row['instance_type_pattern']})$"
        ).fill_null(False)
        gpu_expr = pl.when(matches).then(pl.lit(row["gpu"])).otherwise(gpu_expr)
        if row["gpu_count"] is not None:
            count_expr = pl.when(matches).then(pl.lit(row["gpu_count"])).otherwise(count_expr)
    return frame.with_columns(gpu=gpu_expr, gpu_count=count_expr)


def normalise(
    records: pl.DataFrame,
    aliases: pl.DataFrame,
    source_file: str,
    sha256: str,
    ingested_at: datetime,
    overrides: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Adapter records -> staged rows (STAGED_COLUMNS plus a row key for validation), one per record in
    the records' order (row key i = record i). The records' raw_values are not carried: the caller keeps
    them aside and joins them back by row key where they are stored (10^6 JSON texts through every frame
    cost several GB)."""
    overrides = read_overrides() if overrides is None else overrides
    resolved = resolve_gpu(records, "gpu_name", aliases)
    resolved = apply_instance_overrides(resolved, overrides)
    staged = resolved.with_columns(
        usd_per_gpu_hour=usd_per_gpu_hour(pl.col("usd_per_hour"), pl.col("gpu_count")),
        observed_at=pl.col("observed_at").fill_null(pl.lit(ingested_at).cast(pl.Datetime("us", "UTC"))),
        currency=pl.col("currency").fill_null("USD"),
        source_file=pl.lit(source_file),
        content_sha256=pl.lit(sha256),
        ingested_at=pl.lit(ingested_at).cast(pl.Datetime("us", "UTC")),
    )
    return staged.select(STAGED_COLUMNS).with_row_index(ROW_KEY)
