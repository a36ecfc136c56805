"""AWS Price List offer files for EC2 (the bulk `index.json` and `index.csv`).

In scope: Linux, Shared tenancy, OnDemand term, hourly unit, no pre-installed software
(`preInstalledSw` NA), capacity status Used, and an instance with a GPU. Every other price record is
skipped and counted under the FIRST rule it breaks, in the order of SKIP_RULES, so that the counts
add up to the records read.

Quirks handled here:
- The CSV form starts with a 5-line preamble (FormatVersion, Disclaimer, Publication Date, Version,
  OfferCode) before its header; the JSON form nests prices as terms -> SKU -> term -> priceDimensions.
- Neither form names the GPU: the GPU model, count and memory come from
  data/reference/aws_instance_gpus.csv. An instance with a GPU count but no row there is kept and
  quarantined (so the table can be extended), never silently dropped.
- `observed_at` is the file's publication date (when AWS published these prices).
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from tasks.prices.adapters import (
    AdapterContext,
    AdapterError,
    AdapterResult,
    classify,
    conform,
    read_csv_text,
    read_json,
    reference_table,
    require_columns,
)

PREAMBLE_LINES = 5  # FormatVersion, Disclaimer, Publication Date, Version, OfferCode

# The common shape both forms are read into (all text), named after the JSON attributes.
CSV_COLUMNS = {
    "SKU": "sku",
    "TermType": "term_type",
    "Unit": "unit",
    "PricePerUnit": "price",
    "Currency": "currency",
    "Product Family": "product_family",
    "Instance Type": "instance_type",
    "Tenancy": "tenancy",
    "Operating System": "operating_system",
    "Pre Installed S/W": "pre_installed_sw",
    "CapacityStatus": "capacity_status",
    "Region Code": "region",
    "GPU": "gpu_attribute",
    "vCPU": "vcpu",
    "Memory": "memory",
}
JSON_ATTRIBUTES = {
    "instanceType": "instance_type",
    "tenancy": "tenancy",
    "operatingSystem": "operating_system",
    "preInstalledSw": "pre_installed_sw",
    "capacitystatus": "capacity_status",
    "regionCode": "region",
    "gpu": "gpu_attribute",
    "vcpu": "vcpu",
    "memory": "memory",
}

NO_GPU = "no GPU (instance type not in data/reference/aws_instance_gpus.csv and no GPU count in the record)"


def _blank(column: str) -> pl.Expr:
    return pl.col(column).is_null() | (pl.col(column).str.strip_chars() == "")


# (reason, condition that breaks the rule); evaluated in this order, first match wins.
def skip_rules() -> list[tuple[str, pl.Expr]]:
    return [
        (
            "not a compute instance (storage, data transfer, ...)",
            ~pl.col("product_family").str.starts_with("Compute Instance").fill_null(False),
        ),
        ("not on-demand (reserved term)", pl.col("term_type") != "OnDemand"),
        ("not an hourly price (upfront fee or other unit)", pl.col("unit") != "Hrs"),
        ("operating system not Linux (Windows, RHEL, SUSE, Ubuntu Pro, ...)", pl.col("operating_system") != "Linux"),
        ("tenancy not Shared (Dedicated or Host)", pl.col("tenancy") != "Shared"),
        (
            "pre-installed software (e.g. SQL Server)",
            ~_blank("pre_installed_sw") & (pl.col("pre_installed_sw") != "NA"),
        ),
        ("capacity status not Used (capacity reservations)", pl.col("capacity_status") != "Used"),
        ("not priced in USD", pl.col("currency") != "USD"),
    ]


def _publication_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def read_offer_csv(path: Path) -> tuple[pl.DataFrame, datetime | None]:
    head = path.read_bytes()[:8192].decode("utf-8", errors="replace")
    preamble = list(csv.reader(io.StringIO(head)))[:PREAMBLE_LINES]
    if not preamble or preamble[0][:1] != ["FormatVersion"]:
        raise AdapterError(
            f"{path.name}: not an AWS Price List offer CSV (expected a 5-line preamble starting with FormatVersion)"
        )
    meta = {row[0]: row[1] for row in preamble if len(row) >= 2}
    frame = read_csv_text(path, skip_rows=PREAMBLE_LINES)
    require_columns(frame, CSV_COLUMNS, path, "an AWS Price List offer CSV")
    first_data_line = PREAMBLE_LINES + 2  # preamble, then the header line
    frame = frame.with_columns(
        source_line=pl.int_range(first_data_line, first_data_line + pl.len(), dtype=pl.Int64),
        raw_values=pl.struct(pl.all()).struct.json_encode(),
    ).rename(CSV_COLUMNS)
    return frame, _publication_date(meta.get("Publication Date"))


def read_offer_json(path: Path) -> tuple[pl.DataFrame, datetime | None]:
    offer = read_json(path)
    if not isinstance(offer, dict) or "products" not in offer or "terms" not in offer:
        raise AdapterError(f"{path.name}: not an AWS Price List offer JSON (no 'products' and 'terms')")
    products: dict[str, Any] = offer["products"]
    rows: list[dict[str, Any]] = []
    for term_type, by_sku in offer["terms"].items():
        for sku, terms in by_sku.items():
            product = products.get(sku, {})
            attributes = product.get("attributes", {})
            for term in terms.values():
                for dimension in term.get("priceDimensions", {}).values():
                    prices = dimension.get("pricePerUnit", {})
                    currency, price = next(iter(prices.items()), (None, None))
                    row = {
                        "sku": sku,
                        "term_type": term_type,
                        "unit": dimension.get("unit"),
                        "price": price,
                        "currency": currency,
                        "product_family": product.get("productFamily"),
                    }
                    row.update({ours: attributes.get(theirs) for theirs, ours in JSON_ATTRIBUTES.items()})
                    row["source_line"] = len(rows) + 1  # record index: one per price dimension
                    term_head = {k: v for k, v in term.items() if k != "priceDimensions"}
                    row["raw_values"] = json.dumps({"product": product, "term": term_head, "price": dimension})
                    rows.append(row)
    schema = {name: pl.String for name in CSV_COLUMNS.values()} | {"source_line": pl.Int64, "raw_values": pl.String}
    frame = pl.DataFrame(rows, schema=schema)
    return frame, _publication_date(offer.get("publicationDate"))


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    if path.suffix.lower() == ".json":
        frame, published = read_offer_json(path)
    else:
        frame, published = read_offer_csv(path)

    shapes = reference_table("aws_instance_gpus.csv").select(
        "instance_type", gpu_name_ref="gpu_name", gpu_count_ref="gpu_count", gpu_memory_gb="gpu_memory_gb"
    )
    frame = classify(frame, skip_rules()).join(shapes, on="instance_type", how="left")
    attribute_gpus = pl.col("gpu_attribute").cast(pl.Float64, strict=False)
    frame = frame.with_columns(
        skip_reason=pl.when(
            pl.col("skip_reason").is_null() & pl.col("gpu_name_ref").is_null() & ~(attribute_gpus > 0).fill_null(False)
        )
        .then(pl.lit(NO_GPU))
        .otherwise(pl.col("skip_reason"))
    )
    counts = frame.filter(pl.col("skip_reason").is_not_null()).group_by("skip_reason").len()
    skipped = dict(zip(counts["skip_reason"].to_list(), counts["len"].to_list(), strict=True))

    offers = frame.filter(pl.col("skip_reason").is_null()).with_columns(
        provider=pl.lit(context.provider),
        zone=pl.lit(None, pl.String),
        gpu_name=pl.col("gpu_name_ref"),
        gpu_count=pl.coalesce(pl.col("gpu_count_ref").cast(pl.Float64), attribute_gpus),
        gpu_memory_gb=pl.col("gpu_memory_gb").cast(pl.Float64),
        vcpus=pl.col("vcpu").cast(pl.Float64, strict=False),
        memory_gb=pl.col("memory").str.extract(r"([\d.]+)").cast(pl.Float64, strict=False),
        pricing=pl.lit("on_demand"),
        usd_per_hour=pl.col("price").cast(pl.Float64, strict=False),
        observed_at=pl.lit(published, pl.Datetime("us", "UTC")),
        rejected_reason=pl.when(pl.col("gpu_name_ref").is_null())
        .then(pl.lit("GPU instance type not in data/reference/aws_instance_gpus.csv (GPU model unknown)"))
        .otherwise(None),
    )
    return AdapterResult(records=conform(offers), skipped_by_reason=skipped)
