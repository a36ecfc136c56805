"""Price-list adapters. Each native format has one module with a `parse(path, options) -> AdapterResult`.

Which adapter reads a file is said by configuration (config/sources.toml) or by the CLI's
`--provider/--format`, never guessed from content. A fetcher for a live API can be added later as a
function that downloads to a file and hands it to the same adapter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

# Columns every adapter returns (one row per priced offer and pricing type). Types as in
# core.price_observations; `usd_per_gpu_hour`, `gpu` (canonical), file identity and ingest time are
# added by tasks.prices.normalise, in one place.
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
    "pricing": pl.String,  # on_demand | spot
    "usd_per_hour": pl.Float64,  # USD per instance-hour (null when the source has no price: quarantined)
    "currency": pl.String,
    "observed_at": pl.Datetime("us", "UTC"),  # null = not in the file: the ingest time is used
    "source_line": pl.Int64,  # 1-based line (CSV/TSV, header = line 1) or record index (JSON)
    "raw_values": pl.String,  # the native record, as JSON text
}


class AdapterError(ValueError):
    """The file as a whole cannot be read by this adapter (quarantined as a file, with this message)."""


@dataclass
class AdapterResult:
    records: pl.DataFrame  # ADAPTER_SCHEMA columns
    skipped_by_reason: dict[str, int] = field(default_factory=dict)  # out of scope, by design
    notes: list[str] = field(default_factory=list)  # things a person should hear about


@dataclass(frozen=True)
class AdapterContext:
    provider: str
    ingest_time: datetime  # UTC
    options: dict[str, Any] = field(default_factory=dict)  # per-source options from config/sources.toml


Adapter = Callable[[Path, AdapterContext], AdapterResult]


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


def registry() -> dict[str, Adapter]:
    """Format name (as in config/sources.toml and `--format`) -> adapter."""
    from tasks.prices.adapters import (
        aws_offer,
        aws_spot,
        azure_retail,
        gcp_billing,
        owned,
        price_history,
        skypilot,
    )

    return {
        "skypilot": skypilot.parse,
        "aws-offer": aws_offer.parse,
        "aws-spot": aws_spot.parse,
        "azure-retail": azure_retail.parse,
        "gcp-billing": gcp_billing.parse,
        "price-history": price_history.parse,
        "owned": owned.parse,
    }


FORMATS = ("skypilot", "aws-offer", "aws-spot", "azure-retail", "gcp-billing", "price-history", "owned")
