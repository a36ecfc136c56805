"""Azure Retail Prices API (`https://prices.azure.com/api/retail/prices`): one page (`{"Items": [...],
"NextPageLink": ...}`), a JSON list of such pages, or the Items flattened to CSV (one column per
Items field); JSON for `.json` files, CSV otherwise. Several pages in several files are several sources.

In scope: `Virtual Machines` meters of type `Consumption`, Linux (the product name has no
"Windows"), priced per hour at the first usage tier, and type `Reservation` (pricing reserved_1y /
reserved_3y / reserved_5y by `reservationTerm`). `… Spot` SKUs are spot, the rest on-demand.
Skipped and counted under the FIRST rule broken (SKIP_RULES order): other services (Azure Machine
Learning, HDInsight, ...), dev/test prices, Windows, Low Priority, other units or tiers, and VMs with
no GPU.

Quirks handled here:
- Spot and Low Priority are told apart only by the skuName/meterName suffix, Windows only by the
  productName.
- The GPU model and count per VM size (armSkuName) come from data/reference/azure_vm_gpus.csv. An
  N-series size missing there is kept and quarantined (so the table can be extended), not dropped.
- A Reservation item's `retailPrice` is the price of the WHOLE term (1, 3 or 5 years) for one VM,
  although its `unitOfMeasure` says "1 Hour": it is kept as the term's price (upfront_usd, purchase
  option term_total: payable upfront or monthly, the same total), and the ingest divides it by the
  term's hours. A Reservation without a readable `reservationTerm` is quarantined (CSV flattenings of the
  API may lack the column).
- `effectiveStartDate` is when a price takes effect (sometimes months after the file was fetched),
  not when it was observed: `observed_at` is the ingest time; the date stays in raw_values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from tasks.fetch.context import FetchContext, FetchedFile, ProviderResult, json_field
from tasks.fetch.http import FetchError
from tasks.prices.adapter import (
    AdapterContext,
    AdapterError,
    AdapterResult,
    classify,
    conform,
    frame_reader,
    read_csv_text,
    read_json,
    reference_table,
    require_columns,
)
from tasks.prices.numbers import comma_reason, number
from tasks.providers.provider import Provider
from tasks.settings import Strict

FIELDS = (
    "currencyCode",
    "tierMinimumUnits",
    "retailPrice",
    "armRegionName",
    "meterName",
    "productName",
    "skuName",
    "serviceName",
    "unitOfMeasure",
    "type",
    "armSkuName",
)
OPTIONAL_FIELDS = ("reservationTerm",)  # Reservation items only; absent from some CSV flattenings
GPU_VM_SIZE = r"^Standard_N[CDVG]"  # N-series: the GPU families
NO_GPU = "no GPU (not an N-series GPU VM size)"
NO_SHAPE = "GPU VM size not in data/reference/azure_vm_gpus.csv (GPU model and count unknown; see the file's notes)"


def _suffix(column: str, suffix: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().str.ends_with(suffix).fill_null(False)


def skip_rules() -> list[tuple[str, pl.Expr]]:
    """(reason, rule broken); the first broken rule names the skip."""
    return [
        (
            "not a Virtual Machines meter (Azure Machine Learning, HDInsight, ...)",
            pl.col("serviceName") != "Virtual Machines",
        ),
        ("dev/test price (DevTestConsumption)", pl.col("type") == "DevTestConsumption"),
        (
            "not pay-as-you-go or a reservation (other price type)",
            ~pl.col("type").is_in(["Consumption", "Reservation"]),
        ),
        ("Windows", pl.col("productName").str.contains("Windows")),
        ("Low Priority", _suffix("skuName", "Low Priority") | _suffix("meterName", "Low Priority")),
        ("not priced per hour", pl.col("unitOfMeasure") != "1 Hour"),
        ("higher usage tier", pl.col("tierMinimumUnits").cast(pl.Float64, strict=False) > 0),
        (NO_GPU, ~pl.col("armSkuName").str.contains(GPU_VM_SIZE)),
    ]


def _items_of(document: Any, path: Path) -> list[dict[str, Any]]:
    pages = document if isinstance(document, list) else [document]
    items: list[dict[str, Any]] = []
    for index, page in enumerate(pages, start=1):
        if not isinstance(page, dict) or not isinstance(page.get("Items"), list):
            raise AdapterError(f"{path.name}: not a Retail Prices API page (page {index} has no 'Items' list)")
        items.extend(page["Items"])
    return items


def read_items_json(path: Path) -> pl.DataFrame:
    items = _items_of(read_json(path), path)
    fields = (*FIELDS, *OPTIONAL_FIELDS)
    frame = pl.DataFrame(
        {field: [None if i.get(field) is None else str(i[field]) for i in items] for field in fields},
        schema=dict.fromkeys(fields, pl.String),
    )
    return frame.with_columns(
        source_line=pl.int_range(1, pl.len() + 1, dtype=pl.Int64),  # item index across pages
        raw_values=pl.Series([json.dumps(i) for i in items], dtype=pl.String),
    )


def read_items_csv(path: Path) -> pl.DataFrame:
    frame = read_csv_text(path)
    require_columns(frame, FIELDS, path, "Retail Prices API Items as CSV")
    missing = [pl.lit(None, pl.String).alias(f) for f in OPTIONAL_FIELDS if f not in frame.columns]
    return frame.with_columns(*missing).with_columns(
        source_line=pl.int_range(2, pl.len() + 2, dtype=pl.Int64),  # header is line 1
        raw_values=pl.struct(pl.all()).struct.json_encode(),
    )


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    frame = read_items_json(path) if path.suffix.lower() == ".json" else read_items_csv(path)
    frame = classify(frame, skip_rules())
    # sorted: polars groups in no fixed order, and the stored map should not change between identical runs
    counts = frame.filter(pl.col("skip_reason").is_not_null()).group_by("skip_reason").len().sort("skip_reason")
    skipped = dict(zip(counts["skip_reason"].to_list(), counts["len"].to_list(), strict=True))

    shapes = reference_table("azure_vm_gpus.csv", context.reference_dir).rename({"arm_sku_name": "armSkuName"})
    offers = frame.filter(pl.col("skip_reason").is_null()).join(
        shapes, on="armSkuName", how="left", maintain_order="left"
    )
    is_spot = _suffix("skuName", " Spot") | _suffix("meterName", " Spot")
    is_reservation = pl.col("type") == "Reservation"
    term_years = pl.col("reservationTerm").str.extract(r"^\s*(\d+)\s+Years?\s*$").cast(pl.Float64)
    price = number(pl.col("retailPrice"))
    records = offers.with_columns(
        provider=pl.lit(context.provider),
        region=pl.col("armRegionName"),
        zone=pl.lit(None, pl.String),
        instance_type=pl.col("armSkuName"),
        pricing=pl.when(is_reservation)
        .then(pl.format("reserved_{}y", term_years.cast(pl.Int64)))
        .when(is_spot)
        .then(pl.lit("spot"))
        .otherwise(pl.lit("on_demand")),
        # a reservation's retailPrice is the whole term's: priced per hour by the ingest from the parts below
        usd_per_hour=pl.when(is_reservation).then(None).otherwise(price),
        term_years=pl.when(is_reservation).then(term_years),
        upfront_usd=pl.when(is_reservation).then(price),
        recurring_usd_per_hour=pl.when(is_reservation).then(pl.lit(0.0)),
        purchase_option=pl.when(is_reservation).then(pl.lit("term_total")),
        currency=pl.col("currencyCode"),
        observed_at=pl.lit(None, pl.Datetime("us", "UTC")),
        rejected_reason=pl.when(comma_reason({"price": pl.col("retailPrice")}).is_not_null())
        .then(comma_reason({"price": pl.col("retailPrice")}))
        .when(pl.col("gpu_name").is_null())
        .then(pl.lit(NO_SHAPE))
        .when(is_reservation & term_years.is_null())
        .then(pl.format("reservation without a readable reservationTerm ({}): the term its price covers is unknown",
                        pl.col("reservationTerm").fill_null("missing")))
        .otherwise(None),
    )
    notes = []
    missing = records.filter(pl.col("gpu_name").is_null())["armSkuName"].unique().sort().to_list()
    if missing:
        notes.append(
            f"{len(missing)} Azure GPU VM sizes have no row in data/reference/azure_vm_gpus.csv (quarantined): "
            + ", ".join(missing)
        )
    return AdapterResult(records=conform(records), skipped_by_reason=skipped, notes=notes)


class AzureConfig(Strict):
    """config/fetch.toml [azure]."""

    url: str
    filter: str


def fetch_azure(ctx: FetchContext, result: ProviderResult) -> None:
    """Retail Prices API: the configured $filter, then every NextPageLink the server returns."""
    url: str | None = ctx.base_url
    params: dict[str, str] | None = {"$filter": ctx.section.filter}
    directory = ctx.directory()
    seen: set[str] = set()
    page = 0
    while url:
        page += 1
        if page > ctx.http.max_pages:
            raise FetchError(f"more than {ctx.http.max_pages} pages ([http] max_pages); stopped")
        got = ctx.get(result, url, directory / f"retail-prices-page-{page:04d}.json", params=params)
        result.files.append(FetchedFile(got.saved, "azure", "azure-retail"))
        link = json_field(got.saved, "NextPageLink")
        if link and link in seen:
            raise FetchError(f"NextPageLink repeats an earlier page ({link}); stopped after page {page}")
        seen.add(link or "")
        url, params = link, None


PROVIDER = Provider("azure", formats={"azure-retail": frame_reader(parse)}, fetch=fetch_azure, config=AzureConfig)
