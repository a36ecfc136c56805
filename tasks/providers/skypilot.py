"""SkyPilot catalog `vms.csv` (any cloud, schema v6-v8).

Quirks handled here:
- `GpuInfo` is a Python literal (single quotes), not JSON; in older Azure catalogs it is a bare name.
- Lambda's `TotalGpuMemoryInMiB` equals the per-GPU memory (upstream bug), so memory per GPU is read
  from `Gpus[0].MemoryInfo.SizeInMiB`.
- GCP accelerator rows price only the GPUs (InstanceType empty): each is joined to its host VM row
  (same region and zone) through data/reference/gcp_accelerator_hosts.csv; the host rows come from
  the same file or from `options.host_vms` (config/sources.toml). Offers with no host row are kept
  once, without a price and with `rejected_reason` saying why, so they are quarantined and listed.
- Price and SpotPrice become two rows (on_demand, spot); an empty SpotPrice means no spot offer.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import duckdb
import httpx
import polars as pl

from tasks.fetch.context import FetchContext, FetchedFile, ProviderResult
from tasks.fetch.http import FetchError, describe
from tasks.prices.adapter import (
    AdapterContext,
    AdapterError,
    AdapterResult,
    conform,
    read_csv_text,
    reference_table,
    require_columns,
)
from tasks.prices.numbers import comma_reason, number
from tasks.providers.provider import Provider
from tasks.settings import Strict
from tasks.values import per_distinct
from tasks.warehouse import execute, query

REQUIRED = ("AcceleratorName", "AcceleratorCount", "Price", "Region")
MIB_PER_GB = 1024.0
NO_HOST_ROW = (
    "no GCP host VM price: the catalog prices these GPUs only, and the host catalog has no row for their "
    "host machine type in this zone (see the file's notes)"
)
NO_HOST_TYPE = (
    "no GCP host VM price: the catalog prices these GPUs only, and data/reference/gcp_accelerator_hosts.csv "
    "names no host machine type for them (N1-attached GPUs have no fixed host)"
)  # catalog memory is MiB; GPU memory is reported in GiB ("80 GB" parts = 81920 MiB)


@lru_cache(maxsize=4096)
def gpu_memory_gb(gpu_info: str | None) -> float | None:
    """Per-GPU memory from GpuInfo (a Python literal), or None where the catalog gives no dict."""
    if not gpu_info or not gpu_info.lstrip().startswith("{"):
        return None
    try:
        info = ast.literal_eval(gpu_info)
        return float(info["Gpus"][0]["MemoryInfo"]["SizeInMiB"]) / MIB_PER_GB
    except (ValueError, SyntaxError, KeyError, IndexError, TypeError):
        return None


def read_catalog(path: Path) -> pl.DataFrame:
    frame = read_csv_text(path)
    require_columns(frame, REQUIRED, path, "a SkyPilot catalog")
    if "AvailabilityZone" not in frame.columns:
        frame = frame.with_columns(AvailabilityZone=pl.lit(None, pl.String))
    for column in ("InstanceType", "vCPUs", "MemoryGiB", "GpuInfo", "SpotPrice"):
        if column not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.String).alias(column))
    return frame.with_columns(
        source_line=pl.int_range(2, pl.len() + 2, dtype=pl.Int64),  # header is line 1
        raw_values=pl.struct(pl.all()).struct.json_encode(),
    ).with_columns(rejected_reason=pl.lit(None, pl.String), spot_rejected_reason=pl.lit(None, pl.String))


def _num(column: str) -> pl.Expr:
    return number(pl.col(column))


def _offers(frame: pl.DataFrame, provider: str) -> pl.DataFrame:
    """Whole-instance rows -> one row per pricing type."""
    base = frame.with_columns(
        provider=pl.lit(provider),
        region=pl.col("Region"),
        zone=pl.col("AvailabilityZone"),
        instance_type=pl.col("InstanceType"),
        gpu_name=pl.col("AcceleratorName"),
        gpu_count=_num("AcceleratorCount"),
        gpu_memory_gb=per_distinct(frame["GpuInfo"], gpu_memory_gb, pl.Float64()),
        vcpus=_num("vCPUs"),
        memory_gb=_num("MemoryGiB"),
        currency=pl.lit("USD"),
    )
    on_demand = base.with_columns(pricing=pl.lit("on_demand"), usd_per_hour=_num("Price"),
                                  rejected_reason=pl.coalesce(comma_reason({"price": pl.col("Price")}),
                                                              pl.col("rejected_reason")))
    spot = base.filter(pl.col("SpotPrice").str.strip_chars().str.len_chars() > 0).with_columns(
        pricing=pl.lit("spot"), usd_per_hour=_num("SpotPrice"),
        # the spot row's own reasons: an on-demand reason (a GCP host's on-demand price) is not the spot price's
        rejected_reason=pl.coalesce(comma_reason({"price": pl.col("SpotPrice")}), pl.col("spot_rejected_reason")),
    )
    return pl.concat([on_demand, spot])


def _gcp_offers(
    accelerators: pl.DataFrame, hosts: pl.DataFrame, reference_dir: Path
) -> tuple[pl.DataFrame, list[str]]:
    """GCP: accelerator price + host VM price (same region and zone) = instance price.

    An accelerator row joins every host machine type listed for it (A3 High and A3 Edge both carry
    8 H100s); it is unpriced only when none of them has a host row, and then it is kept once, with
    the reason, so that it is quarantined rather than dropped."""
    mapping = reference_table("gcp_accelerator_hosts.csv", reference_dir).select(
        AcceleratorName="accelerator", AcceleratorCount="accelerator_count", InstanceType="host_instance_type"
    )
    accel = accelerators.with_columns(AcceleratorCount=_num("AcceleratorCount").cast(pl.Int64).cast(pl.String)).drop(
        "InstanceType", "vCPUs", "MemoryGiB"
    )
    host_rows = hosts.select(
        "InstanceType",
        "Region",
        "AvailabilityZone",
        "vCPUs",
        "MemoryGiB",
        host_price=_num("Price"),
        host_spot=_num("SpotPrice"),
        # a host price written with a comma is neither read nor taken for a missing host row
        host_price_comma=comma_reason({"host VM price": pl.col("Price")}),
        host_spot_comma=comma_reason({"host VM spot price": pl.col("SpotPrice")}),
        host_raw=pl.col("raw_values"),
    )
    candidates = accel.join(mapping, on=["AcceleratorName", "AcceleratorCount"], how="left")
    joined = candidates.join(host_rows, on=["InstanceType", "Region", "AvailabilityZone"], how="left")
    priced = joined.filter(pl.col("host_price").is_not_null() | pl.col("host_price_comma").is_not_null())
    unpriced = (
        joined.join(priced.select("source_line").unique(), on="source_line", how="anti")
        .group_by("source_line", maintain_order=True)
        .agg(pl.all().exclude("InstanceType").first(), hosts=pl.col("InstanceType").drop_nulls().str.join(" or "))
    )
    unpriced = unpriced.with_columns(
        rejected_reason=pl.when(pl.col("hosts").str.len_chars() > 0)
        .then(pl.lit(NO_HOST_ROW))
        .otherwise(pl.lit(NO_HOST_TYPE)),
        InstanceType=pl.lit(None, pl.String),
        Price=pl.lit(None, pl.String),
        SpotPrice=pl.lit(None, pl.String),
    )

    notes = []
    for reason, label in ((NO_HOST_TYPE, "no host machine type listed"), (NO_HOST_ROW, "host VM row missing")):
        rows = unpriced.filter(pl.col("rejected_reason") == reason)
        if rows.height:
            offers = rows.group_by("AcceleratorName", "AcceleratorCount", "hosts").len().sort(pl.all())
            listed = [
                f"{o['AcceleratorName']} x{o['AcceleratorCount']}"
                + (f" on {o['hosts']}" if o["hosts"] else "")
                + f" ({o['len']} rows)"
                for o in offers.to_dicts()
            ]
            notes.append(f"GCP accelerator rows without a host VM price, {label} (quarantined): {', '.join(listed)}")
    unpriced = unpriced.drop("hosts")
    # A price that cannot be summed (a comma in the host's) keeps the accelerator's text, so the row is
    # quarantined with the host's reason rather than dropped or read as "no price".
    accelerator_spot = _num("SpotPrice").is_not_null()
    priced = priced.with_columns(
        Price=pl.when(pl.col("host_price").is_not_null())
        .then((_num("Price") + pl.col("host_price")).cast(pl.String))
        .otherwise(pl.col("Price")),
        SpotPrice=pl.when(accelerator_spot & pl.col("host_spot").is_not_null())
        .then((_num("SpotPrice") + pl.col("host_spot")).cast(pl.String))
        .when(accelerator_spot & pl.col("host_spot_comma").is_not_null())
        .then(pl.col("SpotPrice"))
        .otherwise(None),
        raw_values=pl.concat_str(
            [pl.lit('{"accelerator": '), "raw_values", pl.lit(', "host": '), "host_raw", pl.lit("}")]
        ),
        rejected_reason=pl.col("host_price_comma"),
        spot_rejected_reason=pl.col("host_spot_comma"),
    )
    columns = [c for c in priced.columns
               if c not in ("host_price", "host_spot", "host_price_comma", "host_spot_comma", "host_raw")]
    return pl.concat([priced.select(columns), unpriced.select(columns)], how="vertical_relaxed"), notes


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    frame = read_catalog(path)
    skipped: dict[str, int] = {}
    notes: list[str] = []

    has_gpu = pl.col("AcceleratorName").str.strip_chars().str.len_chars() > 0
    host_only = frame.filter(~has_gpu.fill_null(False))
    gpu_rows = frame.filter(has_gpu.fill_null(False))
    accelerator_only = gpu_rows.filter(pl.col("InstanceType").is_null() | (pl.col("InstanceType") == ""))
    whole = gpu_rows.filter(~(pl.col("InstanceType").is_null() | (pl.col("InstanceType") == "")))

    if accelerator_only.height:
        hosts = host_only
        host_file = context.options.get("host_vms")
        if host_file:
            hosts = pl.concat([hosts, read_catalog(Path(host_file))], how="diagonal_relaxed")
        accel_priced, gcp_notes = _gcp_offers(accelerator_only, hosts, context.reference_dir)
        notes += gcp_notes
        whole = pl.concat([whole, accel_priced.select(whole.columns)], how="vertical_relaxed")
    elif host_only.height:
        skipped["no GPU (CPU-only instance)"] = host_only.height

    records = _offers(whole, context.provider)
    if records.height == 0 and frame.height > 0:
        raise AdapterError(f"{path.name}: no GPU offers found in {frame.height} rows")
    return AdapterResult(records=conform(records), skipped_by_reason=skipped, notes=notes)


OPTIONAL = ("AvailabilityZone", "InstanceType", "vCPUs", "MemoryGiB", "GpuInfo", "SpotPrice")


def read_into_duckdb(con: duckdb.DuckDBPyConnection, path: Path, context: AdapterContext) -> AdapterResult | None:
    """The catalog read and turned into adapter records by DuckDB (staging_file_records; sql/prices/
    skypilot_records.sql), the file never passing through Python. None when the catalog has GCP
    accelerator-only rows: their host VM join is priced by `parse` (GCP catalogs are ~1 MB)."""

    try:
        execute(con, "prices/read_csv_text", {"path": str(path), "skip": 0})
    except duckdb.Error as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise AdapterError(f"{path.name}: not a readable CSV file: {first_line}") from error
    catalog = con.table("staging_price_file")
    missing = [c for c in REQUIRED if c not in catalog.columns]
    if missing:
        raise AdapterError(f"{path.name}: not a SkyPilot catalog: missing column(s) {', '.join(missing)}")
    rows, accelerator_rows, cpu_only = query(con, "prices/skypilot_counts").fetchall()[0]
    if accelerator_rows:
        return None
    text = duckdb.sqltype("VARCHAR")
    columns = catalog.project("rowid as _order, *")
    columns = columns.project(
        *[duckdb.ColumnExpression(c) for c in columns.columns],
        *[duckdb.ConstantExpression(None).cast(text).alias(c) for c in OPTIONAL if c not in catalog.columns],
    )
    columns.create_view("skypilot_columns", replace=True)
    execute(con, "prices/skypilot_catalog")
    execute(con, "prices/skypilot_provider", {"provider": context.provider})
    execute(con, "prices/number_macros")
    execute(con, "prices/skypilot_records")
    offers = con.table("staging_file_records").aggregate("count(*)").fetchall()[0][0]
    if offers == 0 and rows > 0:
        raise AdapterError(f"{path.name}: no GPU offers found in {rows} rows")
    return AdapterResult(records=None, skipped_by_reason=(
        {"no GPU (CPU-only instance)": cpu_only} if cpu_only else {}))


def read(con: duckdb.DuckDBPyConnection, path: Path, context: AdapterContext) -> AdapterResult:
    """The adapter: DuckDB reads the catalog (`read_into_duckdb`), or `parse` one with GCP accelerator-only rows."""
    return read_into_duckdb(con, path, context) or parse(path, context)


class SkypilotConfig(Strict):
    """config/fetch.toml [skypilot]."""

    url: str
    clouds: dict[str, str]


def fetch_skypilot(ctx: FetchContext, result: ProviderResult) -> None:
    """SkyPilot catalogs: `<version>/<cloud>/vms.csv` for each configured cloud, conditional GET."""
    base = ctx.base_url.rstrip("/")
    directory = ctx.directory()
    for cloud, version in ctx.section.clouds.items():
        url = f"{base}/{version}/{cloud}/vms.csv"
        try:
            got = ctx.get(result, url, directory / f"{cloud}-{version}-vms.csv", expect="csv", conditional=True)
        except (FetchError, httpx.TransportError) as error:
            result.errors.append(f"{cloud}: {describe(error)}")
            continue
        if not got.not_modified:
            result.files.append(FetchedFile(got.saved, cloud, "skypilot"))


PROVIDER = Provider("skypilot", formats={"skypilot": read}, fetch=fetch_skypilot, config=SkypilotConfig)
