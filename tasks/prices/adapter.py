"""The one adapter contract of price lists, and the helpers adapters share. A format's adapter is a `Reader`,
`(connection, path, AdapterContext) -> AdapterResult`, in its provider's module (tasks/providers/), registered
under its format name: either DuckDB reads the file into `staging_file_records` (the result's `records` is None;
big formats: SkyPilot catalogs, AWS offer files), or Python reads it and returns the records as a frame of
ADAPTER_SCHEMA (Arrow-backed; the ingest stages it). One output schema either way. A Python adapter is written
as `(path, AdapterContext) -> AdapterResult` and registered as `frame_reader(parse)`.

Which adapter reads a file is said by configuration (config/sources.toml) or by the CLI's
`--provider/--format`, never guessed from content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from tasks.prices.config import PriceValidation
from tasks.reference import REFERENCE_TABLES, check_reference_file

# Columns every adapter returns (one row per priced offer and pricing type). Types as in
# core.price_observations; `usd_per_gpu_hour`, `gpu` (canonical), file identity and ingest time are
# added by the normalisation (sql/prices/normalise.sql), in one place.
ADAPTER_SCHEMA: dict[str, Any] = {
    "provider": pl.String,
    "region": pl.String,
    "zone": pl.String,
    "instance_type": pl.String,
    "gpu_name": pl.String,  # the GPU name as the source spells it (resolved through the alias table)
    "gpu_count": pl.Float64,
    "gpu_memory_gb": pl.Float64,
    "vcpus": pl.Float64,
    "memory_gb": pl.Float64,
    "pricing": pl.String,  # on_demand | spot | reserved_1y | reserved_3y | reserved_5y
    # USD per instance-hour (null when the source has no price: quarantined). Commitments leave it null: the
    # normalisation computes their effective hourly price from the term's parts below
    # (marts.commitment_usd_per_hour in sql/prices/normalise.sql).
    "usd_per_hour": pl.Float64,
    "currency": pl.String,
    "observed_at": pl.Datetime("us", "UTC"),  # null = not in the file: the ingest time is used
    "electricity_usd_per_kwh": pl.Float64,  # owned GPUs only: what power costs at the site (USD per kWh)
    "pue": pl.Float64,  # owned GPUs only: power usage effectiveness of the site (>= 1)
    # Commitments only (null for on-demand and spot): the term in years, the fee paid once per instance,
    # the price billed every hour of the term, and what tells the offers of one instance and term apart.
    "term_years": pl.Float64,
    "upfront_usd": pl.Float64,  # USD per instance, once per term
    "recurring_usd_per_hour": pl.Float64,  # USD per instance-hour of the term, used or not
    "purchase_option": pl.String,  # no_upfront | partial_upfront | all_upfront | term_total
    "offering_class": pl.String,  # AWS: standard | convertible
    # Storage volume prices a price list carries beside its instances (record_kind 'storage'; null = an
    # instance price): the AWS offer file's EBS volumes, for the checkpoint storage of the cost model.
    "record_kind": pl.String,
    "storage_type": pl.String,  # the provider's volume name, e.g. gp3
    "usd_per_gb_month": pl.Float64,  # USD per GB-month
    "source_line": pl.Int64,  # 1-based line (CSV/TSV, header = line 1) or record index (JSON)
    "raw_values": pl.String,  # the native record, as JSON text
    # The adapter's own verdict on a record it read but cannot price (e.g. a GCP accelerator with no
    # host VM row): such rows are quarantined with this reason, beside the suite's failures.
    "rejected_reason": pl.String,
}


class AdapterError(ValueError):
    """The file as a whole cannot be read by this adapter (quarantined as a file, with this message)."""


def read_json(path: Path) -> Any:
    """A JSON file, or an AdapterError naming the file and what is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise AdapterError(f"{path.name}: not UTF-8 text ({error.reason} at byte {error.start})") from error
    if not text.strip():
        raise AdapterError(f"{path.name}: the file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise AdapterError(
            f"{path.name}: not valid JSON (truncated or damaged?): {error.msg} at line {error.lineno}"
        ) from error


def read_csv_text(path: Path, **kwargs: Any) -> pl.DataFrame:
    """A CSV file with every column as text, or an AdapterError naming the file and the problem."""
    raw = path.read_bytes()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise AdapterError(f"{path.name}: not UTF-8 text ({error.reason} at byte {error.start})") from error
    if not raw.strip():
        raise AdapterError(f"{path.name}: the file is empty")
    try:
        return pl.read_csv(raw, infer_schema=False, **kwargs)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise AdapterError(f"{path.name}: not a readable CSV file: {first_line}") from error


def require_columns(frame: pl.DataFrame, required: Iterable[str], path: Path, what: str) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise AdapterError(f"{path.name}: not {what}: missing column(s) {', '.join(missing)}")


def classify(frame: pl.DataFrame, rules: list[tuple[str, pl.Expr]]) -> pl.DataFrame:
    """Add `skip_reason` (null = in scope): the label of the first rule (label, broken) each record breaks;
    a rule that cannot be evaluated (null) counts as broken."""
    reason: pl.Expr = pl.lit(None, pl.String)
    for label, broken in reversed(rules):
        reason = pl.when(broken.fill_null(True)).then(pl.lit(label)).otherwise(reason)
    return frame.with_columns(skip_reason=reason)


def reference_file(file_name: str, folder: Path) -> Path:
    """A lookup table of the adapters in `folder` (config/settings.toml [reference] folder)."""
    return folder / file_name


def reference_table(file_name: str, folder: Path) -> pl.DataFrame:
    """A lookup table of the adapters (all columns as text; cast where used), from `folder` as in
    `reference_file`, checked against its declaration first (tasks.reference.REFERENCE_TABLES)."""
    path = reference_file(file_name, folder)
    check_reference_file(path, REFERENCE_TABLES[file_name])
    return pl.read_csv(path, infer_schema=False, comment_prefix="#")


@dataclass
class AdapterResult:
    records: pl.DataFrame | None  # ADAPTER_SCHEMA columns; None: read by DuckDB into staging_file_records
    skipped_by_reason: dict[str, int] = field(default_factory=dict)  # out of scope, by design
    notes: list[str] = field(default_factory=list)  # things a person should hear about


@dataclass(frozen=True)
class AdapterContext:
    provider: str
    ingest_time: datetime  # UTC
    # the lookup tables' folder (config/settings.toml [reference] folder), resolved where the ingest starts
    reference_dir: Path
    validation: PriceValidation  # config/settings.toml [validation.prices]
    options: dict[str, Any] = field(default_factory=dict)  # per-source options from config/sources.toml


# A format's adapter (see the module docstring).
Reader = Callable[[duckdb.DuckDBPyConnection, Path, AdapterContext], AdapterResult]
# An adapter that reads in Python and returns its records as a frame (registered as `frame_reader(parse)`).
Adapter = Callable[[Path, AdapterContext], AdapterResult]


@dataclass(frozen=True)
class frame_reader:
    """The Reader of an adapter that reads in Python (the connection unused)."""

    parse: Adapter

    def __call__(self, con: duckdb.DuckDBPyConnection, path: Path, context: AdapterContext) -> AdapterResult:
        return self.parse(path, context)


def empty_records() -> pl.DataFrame:
    return pl.DataFrame(schema=ADAPTER_SCHEMA)


def conform(frame: pl.DataFrame) -> pl.DataFrame:
    """Cast and order an adapter's output to ADAPTER_SCHEMA (missing columns become null)."""
    return frame.select(
        [
            (pl.col(name) if name in frame.columns else pl.lit(None)).cast(dtype).alias(name)
            for name, dtype in ADAPTER_SCHEMA.items()
        ]
    )

