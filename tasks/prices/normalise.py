"""From an adapter's records to the normalised price shape: canonical GPU, price per GPU-hour,
file identity. The per-GPU price is computed here and nowhere else."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from tasks.reference import resolve_gpu
from tasks.validation import ROW_KEY

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
    "source_file",
    "source_line",
    "content_sha256",
    "ingested_at",
    "raw_values",
)


def usd_per_gpu_hour(usd_per_hour: pl.Expr, gpu_count: pl.Expr) -> pl.Expr:
    """USD per GPU-hour = USD per instance-hour / GPUs per instance (null where the count is not positive)."""
    return pl.when(gpu_count > 0).then(usd_per_hour / gpu_count).otherwise(None)


def normalise(
    records: pl.DataFrame,
    aliases: pl.DataFrame,
    source_file: str,
    sha256: str,
    ingested_at: datetime,
) -> pl.DataFrame:
    """Adapter records -> staged rows (STAGED_COLUMNS plus a row key for validation)."""
    staged = resolve_gpu(records, "gpu_name", aliases).with_columns(
        usd_per_gpu_hour=usd_per_gpu_hour(pl.col("usd_per_hour"), pl.col("gpu_count")),
        observed_at=pl.col("observed_at").fill_null(pl.lit(ingested_at).cast(pl.Datetime("us", "UTC"))),
        currency=pl.col("currency").fill_null("USD"),
        source_file=pl.lit(source_file),
        content_sha256=pl.lit(sha256),
        ingested_at=pl.lit(ingested_at).cast(pl.Datetime("us", "UTC")),
    )
    return staged.select(STAGED_COLUMNS).with_row_index(ROW_KEY)
