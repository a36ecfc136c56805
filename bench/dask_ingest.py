"""7. Parallel ingest: the same files through the real ingest flows, sequential vs Prefect's thread pool
(kind = "threads"; sequential is the default) and vs the Dask task runner (kind = "dask": a LocalCluster),
each with BENCH_DASK_WORKERS workers (default 2), each run in a fresh process and a fresh GPUCOST_HOME. Two
sets: the bundled samples (every configured price list and telemetry file) and generated 10^6-row files (a
SkyPilot catalog, telemetry CSV and Parquet). The floor is the sequential run of the same flows; speed-up =
sequential / parallel. Wall time includes the Dask cluster's start and stop (each ingest flow starts its
own), which is part of what a user waits for."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.common import BenchConfig, Row, env_int, fresh_home, run_step, timed
from bench.generate import write_skypilot_prices, write_telemetry

SECTION = "7. parallel ingest (thread pool and Dask runners)"
PARALLEL = {"threads": "thread pool", "dask": "Dask"}  # [ingest.runner] kind -> label
PEAK_NOTE = {"threads": "; peak = the flow process, its threads included",
             "dask": "; peak = the flow process only (not the workers)"}


def ingest(runner: str, workers: int, home: str, prefect_home: str, prices: list[list[Any]] | None,
           telemetry: list[str] | None) -> dict[str, Any]:
    """Measured step: ingest_prices then ingest_telemetry with the given runner (imports and Prefect's
    start-up, measured by an empty flow first, not timed)."""
    os.environ["PREFECT_HOME"] = prefect_home
    os.environ["PREFECT_SERVER_EPHEMERAL_ENABLED"] = "true"
    os.environ["GPUCOST_INGEST_RUNNER"] = runner
    os.environ["GPUCOST_INGEST_WORKERS"] = str(workers)
    fresh_home(Path(home))
    from tasks.settings import configure_prefect_environment

    configure_prefect_environment()  # before prefect is imported: it reads its settings once
    from prefect import flow

    from flows.ingest_prices import ingest_prices
    from flows.ingest_telemetry import ingest_telemetry
    from tasks import config_files
    from tasks.prices.ingest import PriceSource
    from tasks.sources import configured_price_sources, configured_telemetry_paths

    @flow(name="bench-noop")
    def noop() -> None:
        return None

    noop()
    configured = config_files.sources()
    sources = (configured_price_sources(configured) if prices is None
               else [PriceSource(Path(p), v, f) for p, v, f in prices])
    paths = configured_telemetry_paths(configured) if telemetry is None else [Path(p) for p in telemetry]
    with timed() as t:
        outcomes = [*ingest_prices(sources), *ingest_telemetry(paths)]
    loaded = [o for o in outcomes if o.status == "loaded"]
    return {"seconds": t["s"], "files": len(outcomes), "loaded": len(loaded),
            "rows_loaded": sum(o.rows_loaded for o in loaded)}


def run(cfg: BenchConfig) -> list[Row]:
    workers = env_int("BENCH_DASK_WORKERS", 2)
    work = cfg.work_dir / "dask"
    rows = cfg.max_rows
    generated = work / "generated"
    sky = generated / f"skypilot_{rows}.csv"
    if not sky.exists():
        write_skypilot_prices(sky, rows)
    runs = [generated / f"runs_{rows}.{suffix}" for suffix in ("csv", "parquet")]
    for path in runs:
        if not path.exists():
            write_telemetry(path, rows)
    sets = {
        "bundled samples (13 price lists, 2 telemetry files)": (None, None),
        f"generated: 1 SkyPilot catalog + 2 telemetry files of {rows} rows": (
            [[str(sky), "aws", "skypilot"]], [str(p) for p in runs]),
    }
    out = []
    for index, (name, (prices, telemetry)) in enumerate(sets.items()):
        measured = {}
        for runner in ("sequential", *PARALLEL):
            measured[runner] = run_step(
                "dask_ingest:ingest", runner=runner, workers=workers, home=str(work / f"home-{index}-{runner}"),
                prefect_home=str(work / "prefect"), prices=prices, telemetry=telemetry)
        seq = measured["sequential"]
        for runner, label in PARALLEL.items():
            par = measured[runner]
            same = (seq["loaded"], seq["rows_loaded"]) == (par["loaded"], par["rows_loaded"])
            out.append(Row(
                SECTION, f"{name}: {label} ({workers} workers) vs sequential", par["rows_loaded"], par["seconds"],
                seq["seconds"], par["peak_mb"], seq["peak_mb"],
                f"speed-up {seq['seconds'] / par['seconds']:.2f}x on {os.cpu_count()} CPUs; {par['files']} files, "
                f"{par['loaded']} loaded" + ("" if same else f"; DIFFERENT from sequential: {seq} vs {par}")
                + PEAK_NOTE[runner],
            ))
    return out
