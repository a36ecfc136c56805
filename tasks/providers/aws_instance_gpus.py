"""The GPUs of an AWS instance type, for the price files that name only the instance (the spot price history,
one instance's daily prices): data/reference/aws_instance_gpus.csv joined on the instance type, and the one
reason a row is quarantined when the file lists no such instance."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tasks.prices.adapter import reference_table

UNKNOWN_INSTANCE = "instance type not in data/reference/aws_instance_gpus.csv (GPU model and count unknown)"


def with_instance_gpus(frame: pl.DataFrame, instance_column: str, reference_dir: Path) -> pl.DataFrame:
    """`frame` with gpu_name, gpu_count, gpu_memory_gb, vcpus and memory_gb (as text) of the instance type in
    `instance_column`, null where the lookup table lists none; the rows in their order."""
    shapes = reference_table("aws_instance_gpus.csv", reference_dir).select(
        pl.col("instance_type").alias(instance_column), "gpu_name", "gpu_count", "gpu_memory_gb", "vcpus", "memory_gb"
    )
    return frame.join(shapes, on=instance_column, how="left", maintain_order="left")


def unknown_instance_reason() -> pl.Expr:
    """The quarantine reason of a row whose instance type the lookup table lacks (after with_instance_gpus)."""
    return pl.when(pl.col("gpu_name").is_null()).then(pl.lit(UNKNOWN_INSTANCE))
