"""GCP Cloud Billing Catalog SKUs (`services/6F81-5844-456A/skus`, Compute Engine): a bare list of
SKU objects or the paged envelope `{"skus": [...], "nextPageToken": ...}` (also a list of pages).

GCP bills a GPU VM as three SKUs: the GPUs, the vCPUs ("A2 Instance Core") and the memory ("A2
Instance Ram", per GiB-hour). A VM's price is composed here from the shape of its machine type
(data/reference/gcp_machine_shapes.csv: family, GPU SKU name, GPU count, vCPUs, GiB):

    usd_per_hour = gpu_price * gpu_count + core_price * vcpus + ram_price * memory_gib

for every region the three SKUs all serve and each pricing (OnDemand -> on_demand; Preemptible and
Spot -> spot; Commit1Yr / Commit3Yr -> reserved_1y / reserved_3y, composed from the three commitment
SKUs of the same term). SKUs that are not GPU/core/RAM, or that complete no machine shape in the file,
are skipped and counted.

Committed-use discounts are billed every hour of the term (monthly, nothing upfront), used or not: a
composed commitment keeps its hourly price as `recurring_usd_per_hour` (purchase option no_upfront) and
the ingest prices it over the term. GCP commits to vCPUs, memory and GPUs of a region rather than to a
machine; a commitment for exactly one machine's shape is what is priced here.

Quirks handled here:
- Price = units + nanos / 1e9 of `pricingInfo[0].pricingExpression.tieredRates`: the tier that
  starts at 0, unless it is free (a free first tier, as network SKUs have), then the last priced tier.
- Commitment SKUs are described differently: "Commitment v1: Nvidia Tesla A100 GPU running in Americas
  for 1 Year" (or "... GPU in Frankfurt ..."), "Commitment v1: A2 Cpu in Americas for 1 Year",
  "Commitment v1: A2 Ram in ...".
- Spot SKUs say so in the description ("Spot Preemptible A3 Instance Core", "Nvidia L4 GPU attached to
  Spot Preemptible VMs"); the GPU name is the description's text before " GPU".
- `observed_at` is the newest `effectiveTime` of the three SKUs where the file has it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import Field

from tasks.fetch.context import FetchContext, FetchedFile, ProviderResult, json_field
from tasks.fetch.http import Download, FetchError, write_atomically
from tasks.prices.adapter import (
    AdapterContext,
    AdapterError,
    AdapterResult,
    conform,
    frame_reader,
    read_json,
    reference_table,
)
from tasks.prices.numbers import comma_value_reason
from tasks.providers.provider import Provider
from tasks.settings import Strict

GPU_SKU = re.compile(r"^(?:Spot Preemptible )?(?P<name>.+?) GPU(?: attached to Spot Preemptible VMs)? running in ")
CORE_RAM_SKU = re.compile(r"^(?:Spot Preemptible )?(?P<family>[A-Za-z0-9]+) Instance (?P<kind>Core|Ram) running in ")
COMMIT_GPU_SKU = re.compile(r"^Commitment v1: (?P<name>.+?) GPU (?:running )?in .+ for \d+ Years?$")
COMMIT_CORE_RAM_SKU = re.compile(r"^Commitment v1: (?P<family>[A-Za-z0-9]+) (?P<kind>Cpu|Ram) in .+ for \d+ Years?$")
COMMIT_USAGE = re.compile(r"^Commit(?P<years>\d+)Yr$")
SPOT_USAGE = ("Preemptible", "Spot")

NOT_VM_PART = "not a GPU, vCPU or RAM SKU (network, storage, custom machine, ...)"
UNUSED = "prices no machine type here (no matching GPU, core and RAM SKUs with a shape in gcp_machine_shapes.csv)"


def unit_price(sku: dict[str, Any]) -> float | None:
    """USD per usage unit (hour, or GiB-hour for RAM) from the first pricing info's tiered rates (None when
    there is none, or a rate cannot be read: `price_problem` says why)."""
    try:
        tiers = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"]
        prices = [
            (float(t.get("startUsageAmount", 0) or 0),
             int(t["unitPrice"].get("units", 0) or 0) + int(t["unitPrice"].get("nanos", 0) or 0) / 1e9)
            for t in tiers
            if "unitPrice" in t
        ]
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None
    first = [price for start, price in prices if start == 0]
    if first and first[0] > 0:
        return first[0]
    priced = [price for _, price in prices if price > 0]
    return priced[-1] if priced else (first[0] if first else None)


def price_problem(sku: dict[str, Any]) -> str | None:
    """Why the SKU's tiered rates cannot be read (a comma number, a units or nanos that is not a whole number,
    a tier that is not an object), else None: the offers it composes are quarantined with it, the file's other
    SKUs load."""
    try:
        tiers = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"]
    except (KeyError, IndexError, TypeError):
        return None   # no rates at all: no price, as unit_price says
    for tier in tiers if isinstance(tiers, list) else [tiers]:
        unit = tier.get("unitPrice") if isinstance(tier, dict) else tier
        if unit is None:
            continue
        if not isinstance(unit, dict):
            return f"unitPrice {unit!r} of SKU {sku.get('skuId', '?')} is not an object with units and nanos"
        for field in ("units", "nanos", "startUsageAmount"):
            value = (tier if field == "startUsageAmount" else unit).get(field, 0) or 0
            comma = comma_value_reason(field, value)
            if comma is not None:
                return comma
            try:
                float(value) if field == "startUsageAmount" else int(value)
            except (TypeError, ValueError):
                kind = "a number" if field == "startUsageAmount" else "a whole number"
                return f"{field} {value!r} of SKU {sku.get('skuId', '?')} is not {kind}"
    return None


def _effective_time(sku: dict[str, Any]) -> datetime | None:
    try:
        value = sku["pricingInfo"][0]["effectiveTime"]
    except (KeyError, IndexError, TypeError):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return None


def read_skus(path: Path) -> list[dict[str, Any]]:
    document = read_json(path)
    pages = document if isinstance(document, list) and document and "skus" in document[0] else [document]
    skus: list[dict[str, Any]] = []
    for page in pages:
        if isinstance(page, dict) and isinstance(page.get("skus"), list):
            skus.extend(page["skus"])
        elif isinstance(page, list):
            skus.extend(page)
        else:
            raise AdapterError(f"{path.name}: not Cloud Billing Catalog SKUs (a list, or an object with 'skus')")
    if not all(isinstance(s, dict) and "description" in s and "category" in s for s in skus):
        raise AdapterError(f"{path.name}: not Cloud Billing Catalog SKUs (entries without description/category)")
    return skus


def classify(skus: list[dict[str, Any]]) -> tuple[pl.DataFrame, dict[str, int]]:
    """One row per GPU/core/RAM SKU and region; skip counts for the rest (by SKU)."""
    rows: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    for index, sku in enumerate(skus, start=1):
        usage = sku["category"].get("usageType", "")
        group = sku["category"].get("resourceGroup", "")
        description = sku["description"]
        commit = COMMIT_USAGE.match(usage)
        gpu_pattern, part_pattern = (COMMIT_GPU_SKU, COMMIT_CORE_RAM_SKU) if commit else (GPU_SKU, CORE_RAM_SKU)
        gpu = gpu_pattern.match(description) if group == "GPU" else None
        part = part_pattern.match(description) if group in ("CPU", "RAM") else None
        if gpu is not None:
            kind, name = "gpu", gpu.group("name")
        elif part is not None:
            kind = {"cpu": "core"}.get(part.group("kind").lower(), part.group("kind").lower())
            name = part.group("family")
        else:
            skipped[NOT_VM_PART] = skipped.get(NOT_VM_PART, 0) + 1
            continue
        if commit:
            pricing = f"reserved_{int(commit.group('years'))}y"
        else:
            pricing = "spot" if usage in SPOT_USAGE else "on_demand"
        for region in sku.get("serviceRegions", []):
            rows.append(
                {
                    "sku_index": index,
                    "kind": kind,
                    "name": name,
                    "pricing": pricing,
                    "region": region,
                    "price": unit_price(sku),
                    "price_problem": price_problem(sku),
                    "currency": _currency(sku),
                    "effective_time": _effective_time(sku),
                }
            )
    schema = pl.Schema({
        "sku_index": pl.Int64(),
        "kind": pl.String(),
        "name": pl.String(),
        "pricing": pl.String(),
        "region": pl.String(),
        "price": pl.Float64(),
        "price_problem": pl.String(),
        "currency": pl.String(),
        "effective_time": pl.Datetime("us", "UTC"),
    })
    return pl.DataFrame(rows, schema=schema), skipped


def _currency(sku: dict[str, Any]) -> str:
    try:
        code: str = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"].get("currencyCode", "USD")
        return code
    except (KeyError, IndexError, TypeError, AttributeError):
        return "USD"


def compose(parts: pl.DataFrame, shapes: pl.DataFrame) -> pl.DataFrame:
    """Machine type x region x pricing where the GPU, core and RAM SKUs are all present."""

    def side(kind: str, on: str) -> pl.DataFrame:
        return parts.filter(pl.col("kind") == kind).select(
            pl.col("name").alias(on),
            "pricing",
            "region",
            pl.col("price").alias(f"{kind}_price"),
            pl.col("price_problem").alias(f"{kind}_price_problem"),
            pl.col("currency").alias(f"{kind}_currency"),
            pl.col("sku_index").alias(f"{kind}_sku"),
            pl.col("effective_time").alias(f"{kind}_time"),
        )

    shaped = shapes.with_columns(pl.col("gpu_count", "vcpus", "memory_gib").cast(pl.Float64))
    gpus = side("gpu", "gpu_name").join(shaped, on="gpu_name", how="inner")
    priced = gpus.join(side("core", "family"), on=["family", "pricing", "region"], how="inner").join(
        side("ram", "family"), on=["family", "pricing", "region"], how="inner"
    )
    return priced.with_columns(
        # The one composition formula: GPUs + vCPUs + GiB of RAM, each at its SKU's hourly price.
        usd_per_hour=pl.col("gpu_price") * pl.col("gpu_count")
        + pl.col("core_price") * pl.col("vcpus")
        + pl.col("ram_price") * pl.col("memory_gib"),
        observed_at=pl.max_horizontal("gpu_time", "core_time", "ram_time"),
        currency=pl.when(
            (pl.col("gpu_currency") == pl.col("core_currency")) & (pl.col("core_currency") == pl.col("ram_currency"))
        )
        .then(pl.col("gpu_currency"))
        .otherwise(pl.lit("mixed")),
    ).sort("gpu_sku", "machine_type", "region", "pricing")


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    skus = read_skus(path)
    parts, skipped = classify(skus)
    shapes = reference_table("gcp_machine_shapes.csv", context.reference_dir).select(
        "machine_type", "family", "gpu_name", "gpu_count", "vcpus", "memory_gib"
    )
    offers = compose(parts, shapes)

    used = set(offers["gpu_sku"].to_list()) | set(offers["core_sku"].to_list()) | set(offers["ram_sku"].to_list())
    unused = set(parts["sku_index"].to_list()) - used
    if unused:
        skipped[UNUSED] = len(unused)

    raw = [
        json.dumps({"gpu": skus[g - 1], "core": skus[c - 1], "ram": skus[r - 1]})
        for g, c, r in zip(offers["gpu_sku"], offers["core_sku"], offers["ram_sku"], strict=True)
    ]
    commitment = pl.col("pricing").str.starts_with("reserved_")
    records = offers.with_columns(
        provider=pl.lit(context.provider),
        zone=pl.lit(None, pl.String),
        instance_type=pl.col("machine_type"),
        # a commitment's composed hourly price is billed every hour of its term: priced over the term by the ingest
        usd_per_hour=pl.when(commitment).then(None).otherwise(pl.col("usd_per_hour")),
        recurring_usd_per_hour=pl.when(commitment).then(pl.col("usd_per_hour")),
        upfront_usd=pl.when(commitment).then(pl.lit(0.0)),
        term_years=pl.when(commitment).then(pl.col("pricing").str.extract(r"^reserved_(\d+)y$").cast(pl.Float64)),
        purchase_option=pl.when(commitment).then(pl.lit("no_upfront")),
        memory_gb=pl.col("memory_gib"),
        source_line=pl.col("gpu_sku"),  # the GPU SKU's index in the file
        raw_values=pl.Series(raw, dtype=pl.String),
        rejected_reason=pl.coalesce("gpu_price_problem", "core_price_problem", "ram_price_problem"),
    )
    notes = []
    if unused:
        names = sorted({skus[i - 1]["description"] for i in unused})
        notes.append(f"{len(unused)} GPU/core/RAM SKUs price no machine type in this file: {'; '.join(names)}")
    return AdapterResult(records=conform(records), skipped_by_reason=skipped, notes=notes)


class GcpConfig(Strict):
    """config/fetch.toml [gcp]."""

    url: str
    api_key_env: str
    page_size: int = Field(5000, ge=1)
    currency: str = "USD"


def fetch_gcp(ctx: FetchContext, result: ProviderResult) -> None:
    """Cloud Billing Catalog SKUs: every page (nextPageToken), then ONE file of all pages for the adapter,
    which composes a VM's price from GPU, core and RAM SKUs that may sit on different pages."""
    cfg = ctx.section
    key = os.environ.get(cfg.api_key_env, "").strip()
    if not key:
        result.skipped = f"no API key: set {cfg.api_key_env} (Cloud Billing Catalog API key)"
        return
    url = ctx.base_url
    directory = ctx.directory()
    params: dict[str, Any] = {"pageSize": cfg.page_size, "currencyCode": cfg.currency}
    pages: list[Path] = []
    tokens: set[str] = set()
    while True:
        if len(pages) >= ctx.http.max_pages:
            raise FetchError(f"more than {ctx.http.max_pages} pages ([http] max_pages); stopped")
        got = ctx.get(result, url, directory / f"skus-page-{len(pages) + 1:04d}.json", params=params,
                      headers={"X-Goog-Api-Key": key})
        pages.append(got.saved)
        token = json_field(got.saved, "nextPageToken")
        if not token:
            break
        if token in tokens:
            raise FetchError(f"nextPageToken repeats ({token[:20]}…); stopped after page {len(pages)}")
        tokens.add(token)
        params = {**params, "pageToken": token}
    combined = directory / "skus.json"
    size, sha = write_atomically(combined, json_list_of(pages))
    result.downloads.append(Download(
        url=f"{url} ({len(pages)} pages joined)", http_status=200, path=combined, content_type="application/json",
        size_bytes=size, content_sha256=sha, assembled=True,
    ))
    result.files.append(FetchedFile(combined, "gcp", "gcp-billing"))


def json_list_of(pages: list[Path]) -> Iterator[bytes]:
    """`[page1,page2,...]` streamed from the page files (the adapter reads a list of pages)."""
    yield b"["
    for index, page in enumerate(pages):
        if index:
            yield b","
        with open(page, "rb") as fh:
            yield from iter(lambda: fh.read(1 << 20), b"")
    yield b"]"


PROVIDER = Provider("gcp", formats={"gcp-billing": frame_reader(parse)}, fetch=fetch_gcp, config=GcpConfig)
