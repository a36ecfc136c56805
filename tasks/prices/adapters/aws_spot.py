"""AWS spot price history: `aws ec2 describe-spot-price-history` JSON (`{"SpotPriceHistory": [...]}`)
and its flattened, headerless TSV (AvailabilityZoneId, InstanceType, ProductDescription, SpotPrice,
Timestamp), told apart by the file's suffix (`.json` or not).

Quirks handled here:
- Only `Linux/UNIX` (also `Linux/UNIX (Amazon VPC)`) is kept; other products are skipped and counted
  per product description.
- Zones come as AZ names (`us-east-1a`) or AZ IDs (`use1-az4`, the same physical zone in every
  account). The region is read from the name, or from the ID's prefix through
  data/reference/aws_az_id_regions.csv; an unknown prefix is quarantined with that reason.
- The GPU model and count come from data/reference/aws_instance_gpus.csv (the history names none).
- Every row is a dated observation (`Timestamp`); the current price is the newest per zone.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from tasks.prices.adapters import (
    AdapterContext,
    AdapterError,
    AdapterResult,
    conform,
    read_csv_text,
    read_json,
    reference_table,
)
from tasks.prices.numbers import comma_reason, number

TSV_COLUMNS = ("AvailabilityZoneId", "InstanceType", "ProductDescription", "SpotPrice", "Timestamp")
LINUX = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")
AZ_NAME_REGION = r"^([a-z]{2}(?:-gov)?-[a-z]+-\d+)"  # us-east-1a -> us-east-1; us-east-1-atl-2a -> us-east-1


def read_history_json(path: Path) -> pl.DataFrame:
    document = read_json(path)
    if not isinstance(document, dict) or not isinstance(document.get("SpotPriceHistory"), list):
        raise AdapterError(f"{path.name}: not describe-spot-price-history output (no 'SpotPriceHistory' list)")
    rows = document["SpotPriceHistory"]
    frame = pl.DataFrame(
        {
            "zone": [r.get("AvailabilityZone") or r.get("AvailabilityZoneId") for r in rows],
            "instance_type": [r.get("InstanceType") for r in rows],
            "product": [r.get("ProductDescription") for r in rows],
            "price": [None if r.get("SpotPrice") is None else str(r["SpotPrice"]) for r in rows],
            "timestamp": [None if r.get("Timestamp") is None else str(r["Timestamp"]) for r in rows],
            "raw_values": [json.dumps(r, default=str) for r in rows],
        },
        schema={
            "zone": pl.String,
            "instance_type": pl.String,
            "product": pl.String,
            "price": pl.String,
            "timestamp": pl.String,
            "raw_values": pl.String,
        },
    )
    return frame.with_columns(source_line=pl.int_range(1, pl.len() + 1, dtype=pl.Int64))


def read_history_tsv(path: Path) -> pl.DataFrame:
    frame = read_csv_text(path, separator="\t", has_header=False)
    if frame.width != len(TSV_COLUMNS):
        raise AdapterError(
            f"{path.name}: expected {len(TSV_COLUMNS)} tab-separated columns ({', '.join(TSV_COLUMNS)}), "
            f"found {frame.width}"
        )
    frame = frame.rename(dict(zip(frame.columns, TSV_COLUMNS, strict=True)))
    frame = frame.with_columns(
        source_line=pl.int_range(1, pl.len() + 1, dtype=pl.Int64),  # no header: the first row is line 1
        raw_values=pl.struct(pl.all()).struct.json_encode(),
    )
    return frame.select(
        zone="AvailabilityZoneId",
        instance_type="InstanceType",
        product="ProductDescription",
        price="SpotPrice",
        timestamp="Timestamp",
        raw_values="raw_values",
        source_line="source_line",
    )


def region_of_zone(zones: pl.Expr, az_prefixes: pl.DataFrame) -> pl.Expr:
    """Region from an AZ name (`us-east-1a`) or an AZ ID (`use1-az4`, via the prefix table)."""
    by_name = zones.str.extract(AZ_NAME_REGION)
    prefix = zones.str.extract(r"^([a-z]+\d+)-")
    mapping = dict(zip(az_prefixes["az_id_prefix"].to_list(), az_prefixes["region"].to_list(), strict=True))
    by_id = prefix.replace_strict(mapping, default=None, return_dtype=pl.String)
    return pl.coalesce(by_name, by_id)


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    frame = read_history_json(path) if path.suffix.lower() == ".json" else read_history_tsv(path)

    is_linux = pl.col("product").is_in(LINUX).fill_null(False)
    others = frame.filter(~is_linux).group_by("product").len().sort("product")
    skipped = {
        f"not Linux/UNIX ({product})": count
        for product, count in zip(others["product"].to_list(), others["len"].to_list(), strict=True)
    }

    shapes = reference_table("aws_instance_gpus.csv", context.reference_dir).select(
        "instance_type", "gpu_name", "gpu_count", "gpu_memory_gb", "vcpus", "memory_gb"
    )
    az_prefixes = reference_table("aws_az_id_regions.csv", context.reference_dir)
    linux = frame.filter(is_linux).join(shapes, on="instance_type", how="left", maintain_order="left")
    records = linux.with_columns(
        provider=pl.lit(context.provider),
        region=region_of_zone(pl.col("zone"), az_prefixes),
        pricing=pl.lit("spot"),
        usd_per_hour=number(pl.col("price")),
        currency=pl.lit("USD"),  # describe-spot-price-history prices are USD
        observed_at=pl.col("timestamp")
        .str.strip_chars()
        .str.to_datetime(time_zone="UTC", time_unit="us", strict=False),
    ).with_columns(
        rejected_reason=pl.coalesce(comma_reason({"price": pl.col("price")}), pl.when(pl.col("region").is_null())
        .then(pl.lit("unknown availability zone: its AZ-ID prefix is not in data/reference/aws_az_id_regions.csv"))
        .when(pl.col("gpu_name").is_null())
        .then(pl.lit("instance type not in data/reference/aws_instance_gpus.csv (GPU model and count unknown)"))
        .otherwise(None))
    )
    return AdapterResult(records=conform(records), skipped_by_reason=skipped)
