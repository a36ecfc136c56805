"""AWS Price List offer files for EC2 (the bulk `index.json` and `index.csv`).

In scope: Linux, Shared tenancy, OnDemand (hourly unit) or Reserved terms, no pre-installed software
(`preInstalledSw` NA), capacity status Used, and an instance with a GPU. Every other price record is
skipped and counted under the FIRST rule it breaks (sql/prices/aws_offer_classified.sql), so that the
counts add up to the records read (a Reserved term counts once, however many price dimensions it has).

Reserved terms (`LeaseContractLength` 1yr / 3yr, `PurchaseOption` No / Partial / All Upfront,
`OfferingClass` standard / convertible) come as one or two price dimensions of the same SKU and offer
term code: an hourly one (unit Hrs, 0 for All Upfront) and an "Upfront Fee" (unit Quantity, USD once per
instance; none for No Upfront). They are paired into one commitment record (pricing reserved_1y /
reserved_3y; sql/prices/aws_offer_terms.sql); the normalisation turns the parts into the effective hourly
price over the term. A term that lacks a part its purchase option implies is quarantined with the reason.

The storage volumes (product family Storage, OnDemand, unit GB-Mo, e.g. EBS gp3) are records too, of kind
`storage` (storage_type, usd_per_gb_month): loaded into core.storage_price_observations for the checkpoint
storage of the cost model, or quarantined with the reason (no price; not positive, finite and at most
[validation.prices] max_storage_usd_per_gb_month; not USD).

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
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import duckdb
import httpx
import polars as pl
from pydantic import Field

from tasks.fetch.context import FetchContext, FetchedFile, ProviderResult, json_field
from tasks.fetch.http import FetchError, describe, download
from tasks.prices.adapter import (
    AdapterContext,
    AdapterError,
    AdapterResult,
    conform,
    read_json,
    reference_file,
)
from tasks.providers.provider import Provider
from tasks.settings import Strict
from tasks.warehouse import execute, query

PREAMBLE_LINES = 5  # FormatVersion, Disclaimer, Publication Date, Version, OfferCode

# The common shape both forms are read into (all text), named after the JSON attributes.
CSV_COLUMNS = {
    "SKU": "sku",
    "OfferTermCode": "offer_term_code",
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
    "LeaseContractLength": "lease_contract_length",
    "PurchaseOption": "purchase_option_text",
    "OfferingClass": "offering_class_text",
    "Volume API Name": "volume_api_name",
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
    "volumeApiName": "volume_api_name",
}
JSON_TERM_ATTRIBUTES = {  # a Reserved term's termAttributes
    "LeaseContractLength": "lease_contract_length",
    "PurchaseOption": "purchase_option_text",
    "OfferingClass": "offering_class_text",
}

def _publication_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _csv_publication_date(path: Path) -> datetime | None:
    """The preamble's publication date; an AdapterError when the file has no offer CSV preamble."""
    with open(path, "rb") as fh:
        head = fh.read(8192).decode("utf-8", errors="replace")
    preamble = list(csv.reader(io.StringIO(head)))[:PREAMBLE_LINES]
    if not preamble or preamble[0][:1] != ["FormatVersion"]:
        raise AdapterError(
            f"{path.name}: not an AWS Price List offer CSV (expected a 5-line preamble starting with FormatVersion)"
        )
    meta = {row[0]: row[1] for row in preamble if len(row) >= 2}
    return _publication_date(meta.get("Publication Date"))


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
                        "offer_term_code": term.get("offerTermCode"),
                        "term_type": term_type,
                        "unit": dimension.get("unit"),
                        "price": price,
                        "currency": currency,
                        "product_family": product.get("productFamily"),
                    }
                    row.update({ours: attributes.get(theirs) for theirs, ours in JSON_ATTRIBUTES.items()})
                    term_attributes = term.get("termAttributes") or {}
                    row.update({ours: term_attributes.get(theirs) for theirs, ours in JSON_TERM_ATTRIBUTES.items()})
                    row["source_line"] = len(rows) + 1  # record index: one per price dimension
                    term_head = {k: v for k, v in term.items() if k != "priceDimensions"}
                    row["raw_values"] = json.dumps({"product": product, "term": term_head, "price": dimension})
                    rows.append(row)
    schema = {name: pl.String for name in CSV_COLUMNS.values()} | {"source_line": pl.Int64, "raw_values": pl.String}
    frame = pl.DataFrame(rows, schema=schema)
    return frame, _publication_date(offer.get("publicationDate"))


def read_into_duckdb(con: duckdb.DuckDBPyConnection, path: Path, context: AdapterContext) -> AdapterResult:
    """Either form into staging_file_records (sql/prices/aws_offer_*.sql). The CSV form is read and classified
    by DuckDB as it streams (a multi-GB offer file never passes through Python); the JSON form's nested
    products/terms are walked in Python (offer JSON excerpts), then classified by the same SQL."""

    shapes = str(reference_file("aws_instance_gpus.csv", context.reference_dir))
    execute(con, "prices/aws_gpu_instances", {"shapes_path": shapes})
    if path.suffix.lower() == ".json":
        frame, published = read_offer_json(path)
        with registered_frame(con, "offer_dimensions", frame):
            execute(con, "prices/aws_offer_json_view")
    else:
        published = _csv_publication_date(path)
        try:
            header = [row[0] for row in query(con, "prices/aws_offer_csv_columns", {"path": str(path)}).fetchall()]
        except duckdb.Error as error:
            raise AdapterError(f"{path.name}: not a readable CSV file: {_first_line(error)}") from error
        missing = [c for c in CSV_COLUMNS if c not in header]
        if missing:
            raise AdapterError(f"{path.name}: not an AWS Price List offer CSV: missing column(s) {', '.join(missing)}")
        try:
            execute(con, "prices/aws_offer_csv_lines", {"path": str(path)})
        except duckdb.Error as error:
            raise AdapterError(f"{path.name}: not a readable CSV file: {_first_line(error)}") from error
        execute(con, "prices/aws_offer_csv_view")
    execute(con, "prices/aws_offer_terms")
    execute(con, "prices/aws_offer_classified")
    execute(con, "prices/number_macros")
    max_storage = context.validation.max_storage_usd_per_gb_month
    execute(con, "prices/aws_offer_records", {
        "provider": context.provider, "published_at": published, "max_storage_usd_per_gb_month": max_storage,
    })
    skipped = dict(query(con, "prices/aws_offer_skips").fetchall())
    return AdapterResult(records=None, skipped_by_reason=skipped)


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


@contextmanager
def registered_frame(con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame) -> Iterator[None]:
    con.register(name, frame.to_arrow())
    try:
        yield
    finally:
        con.unregister(name)


def read_terms(path: Path, context: AdapterContext) -> pl.DataFrame:
    """Every Reserved term of the file, paired as the ingest pairs it, in scope or not (adapter columns plus
    operating_system; sql/prices/aws_offer_term_records.sql): to check the term arithmetic on terms the
    ranking skips."""

    with duckdb.connect() as con:
        con.execute("set timezone = 'UTC'")
        read_into_duckdb(con, path, context)
        records: pl.DataFrame = query(con, "prices/aws_offer_term_records", {"provider": context.provider}).pl()
        return records.drop("_row_id")


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    """The adapter records of either form, as a frame (the same SQL as the ingest, in a private DuckDB)."""
    with duckdb.connect() as con:
        con.execute("set timezone = 'UTC'")
        result = read_into_duckdb(con, path, context)
        records = con.table("staging_file_records").pl().drop("_row_id")
    return AdapterResult(records=conform(records), skipped_by_reason=result.skipped_by_reason)


class AwsConfig(Strict):
    """config/fetch.toml [aws]."""

    url: str
    regions: list[str] = []
    offer_format: str = Field("csv", pattern="^(csv|json)$")


def fetch_aws(ctx: FetchContext, result: ProviderResult) -> None:
    """Price List bulk API: region_index.json, then each configured region's current EC2 offer file.
    Both conditional (ETag / If-Modified-Since): an unchanged offer is not downloaded again."""
    cfg = ctx.section
    index_url = ctx.base_url
    directory = ctx.directory()
    known = ctx.validators.get(index_url) or {}
    previous = Path(known["path"]) if known.get("path") else None
    index = download(ctx.client, index_url, directory / "region_index.json", ctx.http, expect="json",
                     validators=known if previous and previous.exists() else None, progress=ctx.progress)
    index.is_index = True
    result.downloads.append(index)
    index_path = previous if index.not_modified and previous else index.saved
    regions: dict[str, Any] = json_field(index_path, "regions") or {}
    wanted = cfg.regions or sorted(regions)
    missing = [r for r in wanted if r not in regions]
    if missing:
        result.errors.append(f"not in the region index: {', '.join(missing)}")
    for region in (r for r in wanted if r in regions):
        offer_url = urljoin(index_url, regions[region]["currentVersionUrl"])
        if cfg.offer_format == "csv":
            offer_url = offer_url.removesuffix(".json") + ".csv"
        target = directory / region / f"index.{cfg.offer_format}"
        try:
            got = ctx.get(result, offer_url, target, expect=cfg.offer_format, conditional=True)
        except (FetchError, httpx.TransportError) as error:
            result.errors.append(f"{region}: {describe(error)}")
            continue
        if not got.not_modified:
            result.files.append(FetchedFile(got.saved, "aws", "aws-offer"))


PROVIDER = Provider("aws", formats={"aws-offer": read_into_duckdb}, fetch=fetch_aws, config=AwsConfig)
