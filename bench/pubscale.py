"""4b. Publish at scale (`BENCH_ONLY=pubscale`): the bundled night (its samples ingested, a champion trained, the
nightly's steps as plain functions), then 1.2 M and 2.4 M extra offers (a generated SkyPilot catalog,
bench/generate.py) ingested on top of it and the night published with the plain `publish_night` in a process of
its own: ranking (every offer x the 5 bundled workloads, two rows each), the published database, top offers,
chart and Parquet copy. The bar is memory: peak resident memory of that process (DuckDB's included) at most
2 GiB. Time is judged against the ranking floor (bench/sql/ranking_floor.sql: one CREATE TABLE AS of the same
arithmetic and ladder at a fixed MFU) over a copy of the same warehouse, in the same run; the floor runs under
a DuckDB cap too (BENCH_PUBSCALE_FLOOR_MEMORY, default 4GB: uncapped it takes ~20 GB at these sizes on a machine
others share)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, BenchConfig, Row, run_step
from bench.generate import write_skypilot_prices
from bench.ranking import catalog_rows_for
from tasks.settings import config_dir

SECTION = "4b. publish at scale"
# This section's own table, rewritten after every case (a case at 2.4 M offers takes tens of minutes)
RESULTS_FILE = RESULTS_DIR / "publish-at-scale.md"


def extra_offer_counts() -> list[int]:
    """BENCH_PUBSCALE_OFFERS (comma-separated), default the issue's 1.2 M and 2.4 M extra offers."""
    raw = os.environ.get("BENCH_PUBSCALE_OFFERS", "1200000,2400000")
    return [int(float(v)) for v in raw.split(",") if v.strip()]


def bundled_night(home: str) -> dict[str, Any]:
    """Set-up step (not a figure): the bundled night in `home`, as the nightly's steps as plain functions."""
    from bench.nightly import plain_steps

    return {"seconds": plain_steps(Path(home))}


def add_offers(home: str, catalog: str) -> dict[str, Any]:
    """Set-up step (not a figure): the generated catalog ingested into `home`'s warehouse."""
    os.environ["GPUCOST_HOME"] = home
    from datetime import UTC, datetime

    from bench.common import Configured
    from tasks.prices.ingest import PriceSource, ingest_price_file
    from tasks.warehouse import warehouse

    loaded = Configured()
    with warehouse(loaded.resources.warehouse) as con:
        aliases = loaded.load_tables(con)
        ingest_price_file(con, PriceSource(Path(catalog), "aws", "skypilot"), aliases, datetime.now(UTC),
                          **loaded.price_options())
        offers = con.execute("select count(*) from core.prices_current").fetchall()[0][0]
    return {"offers": offers}


def run(cfg: BenchConfig) -> list[Row]:
    work = cfg.work_dir / "pubscale"
    work.mkdir(parents=True, exist_ok=True)
    base = work / "bundled"
    run_step("pubscale:bundled_night", timeout=3600, home=str(base))
    config = str(config_dir())
    floor_memory = os.environ.get("BENCH_PUBSCALE_FLOOR_MEMORY", "4GB")
    rows = []
    for extra in extra_offer_counts():
        catalog = work / f"skypilot_offers_{extra}.csv"
        if not catalog.exists():
            write_skypilot_prices(catalog, catalog_rows_for(extra))
        home = work / f"home-{extra}"
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(base, home, ignore=shutil.ignore_patterns("nightly.lock", "duckdb_tmp", "duckdb_spill"))
        fresh = run_step("pubscale:add_offers", timeout=3600, home=str(home), catalog=str(catalog))
        timeout = 3600 * max(1.0, extra / 1e6)
        result = run_step("ranking:publish", timeout=timeout, home=str(home), config=config)
        low = run_step("ranking:floor", timeout=timeout, home=str(home), config=config,
                       database=str(work / "floor.duckdb"), memory_limit=floor_memory)
        shutil.rmtree(home, ignore_errors=True)  # gigabytes: the published file, its Parquet copy, the history
        rows.append(Row(
            SECTION, f"publish_night of the bundled night + {extra:,} extra offers ({fresh['offers']:,} current "
            "offers x the bundled workloads) vs the ranking floor CTAS", result["rows"], result["seconds"],
            low["seconds"], result["peak_mb"], low["peak_mb"],
            f"{result['ranked']} ranked; {result['predictions']} champion predictions; building the published file "
            f"{result['publish_s']:.1f} s ({result['published_mb']:.0f} MB); Parquet snapshot "
            f"{'written' if result.get('parquet') else 'NOT written'}; floor {low['rows']:,} rows under a "
            f"{floor_memory} DuckDB cap" + "".join(f"; {note}" for note in result.get("notes", []))))
        write_rows(rows, cfg)
    return rows


def write_rows(rows: list[Row], cfg: BenchConfig) -> None:
    from datetime import UTC, datetime

    from bench.report import markdown, targets

    header = (f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs (`BENCH_ONLY=pubscale`); the cases "
              "measured so far.")
    RESULTS_FILE.write_text(markdown(rows, header, targets(rows, cfg)), encoding="utf-8")
