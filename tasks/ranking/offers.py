"""`gpucost offers`: the published ranking as a person or a script wants it, and the trust mark shown next to
every answer (how many telemetry runs stand behind the GPU's throughput prediction)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import duckdb
import polars as pl

from tasks.warehouse import query

EXTRAPOLATED = "extrapolated"


def trust_mark(telemetry_runs: int | None) -> str:
    """What stands behind a GPU's prediction: `N runs` of its own telemetry, or `extrapolated` (none: the
    model priced it from other GPUs, with the wider leave-one-GPU-out interval)."""
    if not telemetry_runs:
        return EXTRAPOLATED
    return f"{telemetry_runs} run" + ("" if telemetry_runs == 1 else "s")


def trust_column(runs_column: str = "telemetry_runs_for_gpu") -> pl.Expr:
    """trust_mark as a polars expression over a telemetry-run count column (same wording, vectorised)."""
    runs = pl.col(runs_column).fill_null(0)
    return (pl.when(runs == 0).then(pl.lit(EXTRAPOLATED))
            .when(runs == 1).then(pl.lit("1 run"))
            .otherwise(runs.cast(pl.String) + pl.lit(" runs"))).alias("trust")


@dataclass(frozen=True)
class OfferFilter:
    """What `gpucost offers` asks for; None means no filter."""

    workload: str | None = None
    gpu: str | None = None
    provider: str | None = None
    region: str | None = None
    pricing: Literal["spot", "on_demand"] | None = None
    max_hours: float | None = None
    max_usd: float | None = None
    max_co2_kg: float | None = None
    limit: int = 10
    sort_by: Literal["cost", "time", "co2"] = "cost"


# Columns of the offers query only the report page shows (the commitment's terms, what is extrapolated).
PAGE_ONLY_COLUMNS = ("purchase_option", "offering_class", "extrapolation")


def ranked_offers(con: duckdb.DuckDBPyConnection, wanted: OfferFilter) -> pl.DataFrame:
    """Tonight's ranked offers matching `wanted`, best first per workload, with the trust mark: every column of the
    offers query (the report page's too)."""
    frame: pl.DataFrame = query(con, "offers/offers", asdict(wanted)).pl()
    return frame.with_columns(trust_column())


def find_offers(con: duckdb.DuckDBPyConnection, wanted: OfferFilter) -> pl.DataFrame:
    """`gpucost offers`: ranked_offers without the page's own columns."""
    return ranked_offers(con, wanted).drop(PAGE_ONLY_COLUMNS)


def published_workloads(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [row[0] for row in query(con, "offers/published_workloads").fetchall()]


def open_published(path: Path) -> duckdb.DuckDBPyConnection:
    """The published database, read-only; FileNotFoundError says how to make one."""
    if not path.exists():
        raise FileNotFoundError(f"no published ranking at {path}: run `gpucost run` (or `gpucost publish`) first")
    return duckdb.connect(str(path), read_only=True)
