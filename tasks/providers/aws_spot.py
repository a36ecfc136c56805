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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import Field

from tasks.extras import hint
from tasks.fetch.context import FetchContext, FetchedFile, ProviderResult
from tasks.fetch.http import Download, write_atomically
from tasks.prices.adapter import (
    AdapterContext,
    AdapterError,
    AdapterResult,
    conform,
    frame_reader,
    read_csv_text,
    read_json,
    reference_table,
)
from tasks.prices.dates import undated_reason
from tasks.prices.numbers import comma_reason, number
from tasks.providers.aws_instance_gpus import unknown_instance_reason, with_instance_gpus
from tasks.providers.provider import Provider
from tasks.settings import Strict

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

    az_prefixes = reference_table("aws_az_id_regions.csv", context.reference_dir)
    linux = with_instance_gpus(frame.filter(is_linux), "instance_type", context.reference_dir)
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
        rejected_reason=pl.coalesce(
            undated_reason("Timestamp", pl.col("timestamp"), pl.col("observed_at")),
            comma_reason({"price": pl.col("price")}),
            pl.when(pl.col("region").is_null()).then(
                pl.lit("unknown availability zone: its AZ-ID prefix is not in data/reference/aws_az_id_regions.csv")),
            unknown_instance_reason(),
        )
    )
    return AdapterResult(records=conform(records), skipped_by_reason=skipped)


class AwsSpotConfig(Strict):
    """config/fetch.toml [aws-spot]."""

    url: str = ""
    regions: list[str]
    instance_families: list[str]
    product_descriptions: list[str] = ["Linux/UNIX"]
    first_lookback_hours: float = Field(24.0, gt=0)


def fetch_aws_spot(ctx: FetchContext, result: ProviderResult) -> None:
    """DescribeSpotPriceHistory through boto3 (its own retries and paging), GPU families only, since the
    newest price already in the warehouse; skipped when no AWS credentials are configured, or without boto3
    (the aws extra)."""
    without_boto3 = hint("aws", "the aws-spot price fetch")
    if without_boto3:
        result.skipped = without_boto3
        return
    import boto3
    from botocore.config import Config

    cfg = ctx.section
    session = boto3.session.Session()
    if session.get_credentials() is None:
        result.skipped = ("no AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE or an "
                          "instance role)")
        return
    endpoint = ctx.base_url or None
    policy = ctx.http
    botocore_config = Config(
        retries={"mode": "standard", "max_attempts": policy.attempts},
        connect_timeout=policy.connect_timeout_seconds,
        read_timeout=policy.read_timeout_seconds,
    )
    directory = ctx.directory()
    for region in cfg.regions:
        key = f"{endpoint or 'ec2'}#DescribeSpotPriceHistory?region={region}"
        since = ctx.spot_watermarks.get(key)
        start = since or ctx.fetched_at - timedelta(hours=cfg.first_lookback_hours)
        started = datetime.now(UTC)
        try:
            client = session.client("ec2", region_name=region, endpoint_url=endpoint, config=botocore_config)
            rows: list[dict[str, Any]] = []
            pages = client.get_paginator("describe_spot_price_history").paginate(
                StartTime=start,
                ProductDescriptions=cfg.product_descriptions,
                Filters=[{"Name": "instance-type", "Values": [f"{f}.*" for f in cfg.instance_families]}],
            )
            for page in pages:
                rows.extend(page.get("SpotPriceHistory", []))
        except Exception as error:  # botocore's errors are many; one line, the next region goes on
            result.errors.append(f"{region}: {type(error).__name__}: {' '.join(str(error).split())[:300]}")
            continue
        # The API also returns the price in effect at StartTime, which the last fetch already has.
        new = [r for r in rows if since is None or r["Timestamp"] > since]
        if not new:
            continue
        target = directory / f"spot-{region}-{ctx.fetched_at:%H%M%S}.json"
        body = json.dumps({"SpotPriceHistory": [_spot_row(r) for r in new]}, indent=0).encode()
        size, sha = write_atomically(target, [body])
        result.downloads.append(Download(
            url=key, http_status=200, path=target, content_type="application/json", size_bytes=size,
            content_sha256=sha, downloaded_at=started, seconds=(datetime.now(UTC) - started).total_seconds(),
            watermark=max(r["Timestamp"] for r in new),
        ))
        result.files.append(FetchedFile(target, "aws", "aws-spot"))


def _spot_row(row: dict[str, Any]) -> dict[str, Any]:
    """boto3's row as `aws ec2 describe-spot-price-history` prints it (the adapter's JSON input)."""
    out = dict(row)
    out["Timestamp"] = row["Timestamp"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    return out


PROVIDER = Provider("aws-spot", formats={"aws-spot": frame_reader(parse)}, fetch=fetch_aws_spot, config=AwsSpotConfig)
