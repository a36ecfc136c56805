"""4. Ranking and publish at scale: 10^5 current offers x 10 (or 100) workloads (10^6 or 10^7 offer x workload
pairs) through the plain `publish_night` (rank every offer with the real champion model at every rung of its
cluster ladder, two rows per pair, build and swap the published database, top offers, chart) vs ONE DuckDB
create-table-as-select of the same arithmetic (the floor, bench/sql/ranking_floor.sql: the same ladder and the
two choices at a fixed MFU).

The champion is a real one, trained once (train_and_register on the bundled telemetry sample) in the
benchmark's own GPUCOST_HOME; the offers are a generated SkyPilot catalog ingested with the pipeline."""

from __future__ import annotations

import shutil
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import BenchConfig, Configured, Row, fresh_home, run_step, timed
from bench.floors import floor_sql
from bench.generate import skypilot_prices, workloads_toml, write_skypilot_prices
from tasks.settings import DATA_DIR, config_dir

SECTION = "4. ranking + publish"
TELEMETRY_SAMPLE = DATA_DIR / "samples" / "telemetry" / "published_benchmarks.csv"


def catalog_rows_for(offers: int) -> int:
    """Catalog rows whose on-demand plus spot offers add up to at least `offers`."""
    import polars as pl

    frame = skypilot_prices(offers)  # at least one offer per row, so `offers` rows always suffice
    per_row = 1 + (pl.col("SpotPrice").fill_null("").str.len_chars() > 0).cast(pl.Int64)
    cumulative = frame.select(per_row.cum_sum())
    return int(cumulative.to_series().search_sorted(offers)) + 1


def write_config(target: Path, workloads: int) -> Path:
    """A copy of the configuration folder with `workloads` generated workloads."""
    from tasks.config_files import load_config

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(config_dir(), target)
    (target / "workloads.toml").write_text(workloads_toml(workloads, load_config("workloads")), encoding="utf-8")
    return target


def prepare(home: str, catalog: str, config: str) -> dict[str, Any]:
    """Set-up step (not a figure): champion trained on the sample, the generated offers ingested."""
    fresh_home(Path(home))
    from tasks.contract.features import refresh_feature_table
    from tasks.model.training import read_training_features, train_and_register
    from tasks.prices.ingest import PriceSource, ingest_price_file
    from tasks.telemetry.ingest import ingest_telemetry_file
    from tasks.warehouse import connect

    now = datetime.now(UTC)
    loaded = Configured()
    con = connect(loaded.resources.warehouse)
    aliases = loaded.load_tables(con)
    ingest_telemetry_file(con, TELEMETRY_SAMPLE, aliases, now, **loaded.telemetry_options())
    refresh_feature_table(con, loaded.reference)
    features = read_training_features(con)
    ingest_price_file(con, PriceSource(Path(catalog), "aws", "skypilot"), aliases, now, **loaded.price_options())
    offers = con.execute("select count(*) from core.prices_current").fetchone()[0]
    con.close()
    models, contract = loaded.config_files.models(), loaded.contract()
    with timed() as t:
        outcome = train_and_register(features, models, loaded.resources, contract)
    return {"offers": offers, "champion": outcome.version, "train_s": t["s"], "config": config}


def publish(home: str, config: str) -> dict[str, Any]:
    """Measured step: publish_night (rank + published database + top offers + chart), champion loaded first."""
    import os

    os.environ["GPUCOST_HOME"] = home
    os.environ["GPUCOST_CONFIG_DIR"] = config
    from tasks.model.predict import load_champion
    from tasks.publishing.night import publish_night
    from tasks.warehouse import connect

    loaded = Configured()
    champion = load_champion(loaded.resources.tracking_uri, loaded.contract())
    if champion is None:
        raise RuntimeError("no champion in the benchmark's MLflow store")
    con = connect(loaded.resources.warehouse)
    now = datetime.now(UTC)
    night = loaded.night()
    with timed() as t:
        outcome = publish_night(con, champion, now.date(), now, loaded.resources, **night)
    con.close()
    return {"seconds": t["s"], "rows": outcome.ranking.rows, "ranked": outcome.ranking.ranked,
            "predictions": outcome.ranking.predictions, "publish_s": outcome.published.seconds,
            "published_mb": outcome.published.size_bytes / 1e6, "parquet": outcome.parquet is not None,
            "notes": outcome.notes}


def floor(home: str, config: str, database: str, sql: str = "ranking_floor",
          memory_limit: str | None = None) -> dict[str, Any]:
    """Measured step: the floor CTAS (bench/sql/`sql`.sql) over a copy of the same warehouse (copy not timed);
    `memory_limit`: DuckDB's cap for it (spilling beside the copy), else uncapped."""
    import os

    os.environ["GPUCOST_CONFIG_DIR"] = config
    from tasks import config_files
    from tasks.ranking.workloads import load_workloads
    from tasks.warehouse import connect, memory_capped

    shutil.copyfile(Path(home) / "warehouse.duckdb", database)
    con = connect(Path(database))
    con.execute("drop table if exists marts.gpu_cost_ranking_history")  # not needed by the floor: less to copy
    workloads = load_workloads(config_files.workloads(), config_files.ranking())
    con.register("ranking_workloads", workloads)
    capped = memory_capped(con, memory_limit, Path(database).with_suffix(".spill")) if memory_limit else nullcontext()
    with capped, timed() as t:
        con.execute(floor_sql(sql))
        con.execute("checkpoint")
    rows = con.execute("select count(*) from floor_ranking").fetchone()[0]
    con.close()
    Path(database).unlink(missing_ok=True)
    shutil.rmtree(Path(database).with_suffix(".spill"), ignore_errors=True)
    return {"seconds": t["s"], "rows": rows}


def run(cfg: BenchConfig) -> list[Row]:
    work = cfg.work_dir / "ranking"
    work.mkdir(parents=True, exist_ok=True)
    catalog = work / f"skypilot_offers_{cfg.rank_offers}.csv"
    if not catalog.exists():
        write_skypilot_prices(catalog, catalog_rows_for(cfg.rank_offers))
    config = write_config(work / "config", cfg.rank_workloads)
    home = work / "home"
    # 10^7 pairs take about ten times as long as 10^6: the steps' time limit grows with the pairs
    timeout = 1800 * max(1.0, cfg.rank_offers * cfg.rank_workloads / 1e6)
    setup = run_step("ranking:prepare", timeout=timeout, home=str(home), catalog=str(catalog), config=str(config))
    result = run_step("ranking:publish", timeout=timeout, home=str(home), config=str(config))
    low = run_step("ranking:floor", timeout=timeout, home=str(home), config=str(config),
                   database=str(work / "floor.duckdb"))
    offers = setup["offers"]
    pairs = offers * cfg.rank_workloads
    return [
        Row(SECTION, f"publish_night vs one CTAS with the ladder ({offers} offers x {cfg.rank_workloads} workloads "
            f"= {pairs:,} pairs, 2 cluster choices each)",
            result["rows"], result["seconds"], low["seconds"], result["peak_mb"], low["peak_mb"],
            f"{result['ranked']} pairs ranked; {result['predictions']} champion predictions (v{setup['champion']}); "
            f"of which building the published file {result['publish_s']:.1f} s ({result['published_mb']:.0f} MB); "
            f"Parquet snapshot {'written' if result.get('parquet') else 'NOT written'}; floor {low['rows']:,} rows"
            + "".join(f"; {note}" for note in result.get("notes", []))),
    ]
