"""Dated price histories: every row is an observation at a known date, so the warehouse holds real
history and "the price on date D" is a query (sql/prices/price_on_date.sql). Two layouts, told apart
by their header:

- GCP whole-VM prices per quarterly snapshot, flattened from Cyclenerd's `pricing.yml`
  (snapshot_commit_date, machine_type, gpu_type, gpu_count, vcpu, ram_gib, region, hour_usd,
  hour_spot_usd): on-demand and, where given, spot rows; `observed_at` = the snapshot date (UTC
  midnight). `gpu_type` goes through the alias table as spelled (case matters: `rtx6000` is not
  Lambda's `RTX6000`).
- One instance's daily on-demand price (`timestamp,instance,price_usd`, e.g. AWS p5.48xlarge). The
  file has no region: it comes from the source's `options = { region = "..." }` in
  config/sources.toml (a `region` column would win). The instance's GPUs come from
  data/reference/aws_instance_gpus.csv. Empty (backfilled placeholder) rows are skipped and counted.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tasks.prices.adapter import AdapterContext, AdapterError, AdapterResult, conform, frame_reader, read_csv_text
from tasks.prices.dates import undated_reason
from tasks.prices.numbers import comma_reason, number
from tasks.providers.aws_instance_gpus import unknown_instance_reason, with_instance_gpus
from tasks.providers.provider import Provider

CYCLENERD = ("snapshot_commit_date", "machine_type", "gpu_type", "gpu_count", "vcpu", "ram_gib", "region", "hour_usd")
DAILY = ("timestamp", "instance", "price_usd")
EMPTY_ROW = "empty price (backfilled placeholder row)"


def _text(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars()  # some rows end in a stray carriage return


def _num(column: str) -> pl.Expr:
    return number(pl.col(column))


def _timestamps(column: str) -> pl.Expr:
    """ISO dates or date-times without a zone, read as UTC."""
    text = _text(column)
    return pl.coalesce(
        text.str.to_datetime("%Y-%m-%dT%H:%M:%S", time_zone="UTC", time_unit="us", strict=False),
        text.str.to_datetime("%Y-%m-%d", time_zone="UTC", time_unit="us", strict=False),
    )


def parse_cyclenerd(frame: pl.DataFrame, context: AdapterContext) -> AdapterResult:
    base = frame.with_columns(
        provider=pl.lit(context.provider),
        zone=pl.lit(None, pl.String),
        instance_type=pl.col("machine_type"),
        gpu_name=_text("gpu_type"),
        gpu_count=_num("gpu_count"),
        vcpus=_num("vcpu"),
        memory_gb=_num("ram_gib"),
        currency=pl.lit("USD"),
        observed_at=_timestamps("snapshot_commit_date"),
    )
    undated = undated_reason("snapshot_commit_date", pl.col("snapshot_commit_date"), pl.col("observed_at"))
    on_demand = base.with_columns(pricing=pl.lit("on_demand"), usd_per_hour=_num("hour_usd"),
                                  rejected_reason=pl.coalesce(undated, comma_reason({"price": pl.col("hour_usd")})))
    has_spot = _text("hour_spot_usd").str.len_chars() > 0 if "hour_spot_usd" in frame.columns else pl.lit(False)
    spot = base.filter(has_spot.fill_null(False)).with_columns(
        pricing=pl.lit("spot"), usd_per_hour=_num("hour_spot_usd"),
        rejected_reason=pl.coalesce(undated, comma_reason({"price": pl.col("hour_spot_usd")})),
    )
    records = pl.concat([on_demand, spot]).sort("source_line", "pricing")
    return AdapterResult(records=conform(records))


def parse_daily(frame: pl.DataFrame, context: AdapterContext, path: Path) -> AdapterResult:
    region = context.options.get("region")
    if "region" not in frame.columns and not region:
        raise AdapterError(
            f"{path.name}: the file has no region column; name it in config/sources.toml with "
            'options = { region = "..." } for this source'
        )
    empty = _text("price_usd").fill_null("").str.len_chars() == 0
    skipped = {EMPTY_ROW: frame.filter(empty).height} if frame.filter(empty).height else {}
    rows = with_instance_gpus(frame.filter(~empty), "instance", context.reference_dir)
    records = rows.with_columns(
        provider=pl.lit(context.provider),
        region=pl.col("region") if "region" in frame.columns else pl.lit(region),
        zone=pl.lit(None, pl.String),
        instance_type=_text("instance"),
        pricing=pl.lit(context.options.get("pricing", "on_demand")),
        usd_per_hour=_num("price_usd"),
        currency=pl.lit("USD"),
        observed_at=_timestamps("timestamp"),
    ).with_columns(
        rejected_reason=pl.coalesce(
            undated_reason("timestamp", pl.col("timestamp"), pl.col("observed_at")),
            comma_reason({"price": pl.col("price_usd")}),
            unknown_instance_reason(),
        ),
    )
    return AdapterResult(records=conform(records), skipped_by_reason=skipped)


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    frame = read_csv_text(path)
    frame = frame.with_columns(
        source_line=pl.int_range(2, pl.len() + 2, dtype=pl.Int64),  # header is line 1
        raw_values=pl.struct(pl.all()).struct.json_encode(),
    )
    if all(c in frame.columns for c in CYCLENERD):
        return parse_cyclenerd(frame, context)
    if all(c in frame.columns for c in DAILY):
        return parse_daily(frame, context, path)
    raise AdapterError(
        f"{path.name}: not a known price history layout: expected the columns {', '.join(CYCLENERD)} "
        f"(GCP snapshots) or {', '.join(DAILY)} (one instance, daily); found {', '.join(frame.columns[:12])}"
    )


PROVIDER = Provider("price-history", formats={"price-history": frame_reader(parse)})
