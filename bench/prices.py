"""1. Price ingest at scale: generated SkyPilot catalogs (10^4 .. 10^6 rows) through the plain
`ingest_price_file` (parse, normalise, compare with history, validate, store) vs DuckDB `read_csv` of the
same file into a table."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import (
    STORE_FLOOR,
    BenchConfig,
    Configured,
    Row,
    checkpointed_size,
    fresh_home,
    run_step,
    storage_figures,
    timed,
)
from bench.generate import write_aws_offer_csv, write_skypilot_prices

SECTION = "1. price ingest (SkyPilot CSV)"
OFFER_SECTION = "1b. price ingest (AWS offer CSV)"


def ingest(path: str, home: str, fmt: str = "skypilot") -> dict[str, Any]:
    """Measured step: one price file of format `fmt` (skypilot, aws-offer) into an empty warehouse (set-up not
    timed; Great Expectations is not imported: the ingest checks with SQL derived from the suites)."""
    fresh_home(Path(home))
    from tasks.prices.ingest import PriceSource, ingest_price_file
    from tasks.warehouse import connect

    loaded = Configured()
    con = connect(loaded.resources.warehouse)
    aliases, options = loaded.load_tables(con), loaded.price_options()
    before_bytes = checkpointed_size(con)
    with timed() as t:
        outcome = ingest_price_file(con, PriceSource(Path(path), "aws", fmt), aliases, datetime.now(UTC), **options)
    storage = storage_figures(con, Path(home), before_bytes)
    if outcome.status != "loaded":
        raise RuntimeError(f"{path}: {outcome.status}: {outcome.error}")
    return {"seconds": t["s"], "cpu_s": t["cpu_s"], "rows_read": outcome.rows_read, "rows_loaded": outcome.rows_loaded,
            "rows_quarantined": outcome.rows_quarantined, "rows_skipped": outcome.rows_skipped, **storage}


def storage_note(result: dict[str, Any]) -> str:
    """Warehouse growth and landed size of a measured ingest (MB)."""
    return (f"warehouse +{result['warehouse_growth_mb']:.1f} MB, landed {result.get('landed_mb', 0):.1f} MB")


def store_floor_note(store: dict[str, Any], read: dict[str, Any], what: str) -> str:
    """The store floor's row note: what it stored and landed, and how it compares with the read floor."""
    return (f"{store['rows']} {what} stored with lineage, file landed ({store['landed_mb']:.1f} MB); store floor = "
            f"{store['seconds'] / read['seconds']:.1f}x the read floor")


def run_offer(cfg: BenchConfig) -> list[Row]:
    """The AWS offer CSV at a real size (default 2 GB: one region's EC2 list is hundreds of MB, all regions
    several GB), generated from the bundled sample; the target is bounded memory (<= 1.5 GB)."""
    path = cfg.work_dir / "prices" / f"aws_offer_{cfg.offer_bytes}.csv"
    if not path.exists():
        write_aws_offer_csv(path, cfg.offer_bytes)
    result = run_step("prices:ingest", path=str(path), home=str(cfg.work_dir / "prices" / "home-offer"),
                      fmt="aws-offer")
    floor = run_step("floors:load_file", path=str(path), database=str(cfg.work_dir / "prices" / "floor.duckdb"))
    return [Row(
        OFFER_SECTION, "ingest_price_file (aws-offer CSV) vs read_csv", result["rows_read"] + result["rows_skipped"],
        result["seconds"], floor["seconds"], result["peak_mb"], floor["peak_mb"],
        f"{path.stat().st_size / 1e9:.2f} GB; {result['rows_loaded']} GPU offers loaded, "
        f"{result['rows_skipped']} records skipped (out of scope); {storage_note(result)}",
    )]


def run(cfg: BenchConfig) -> list[Row]:
    rows = []
    for n in cfg.data_sizes:
        path = cfg.work_dir / "prices" / f"skypilot_{n}.csv"
        if not path.exists():
            write_skypilot_prices(path, n)
        result = run_step("prices:ingest", path=str(path), home=str(cfg.work_dir / "prices" / f"home-{n}"))
        floor = run_step("floors:load_file", path=str(path), database=str(cfg.work_dir / "prices" / "floor.duckdb"))
        store = run_step("floors:store_file", path=str(path), database=str(cfg.work_dir / "prices" / "store.duckdb"),
                         kind="skypilot")
        note = (f"{result['rows_read']} offers ({result['rows_quarantined']} quarantined: no price); "
                f"{path.stat().st_size / 1e6:.0f} MB; {storage_note(result)}")
        rows.append(Row(SECTION, "ingest_price_file vs read_csv", n, result["seconds"], floor["seconds"],
                        result["peak_mb"], floor["peak_mb"], note))
        rows.append(Row(SECTION, f"ingest_price_file vs {STORE_FLOOR}", n, result["seconds"], store["seconds"],
                        result["peak_mb"], store["peak_mb"], store_floor_note(store, floor, "typed offers")))
    return rows
