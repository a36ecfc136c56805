"""2. Telemetry ingest at scale: generated runs (10^4 .. 10^6, CSV and Parquet) through the plain
`ingest_telemetry_file` (read, normalise, stage, validate, store by run_id) vs DuckDB's load of the file."""

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
from bench.generate import write_telemetry
from bench.prices import storage_note, store_floor_note

SECTION = "2. telemetry ingest"


def ingest(path: str, home: str) -> dict[str, Any]:
    """Measured step: one telemetry file into an empty warehouse (set-up not timed; Great Expectations, which
    the ingest does not use, is not imported)."""
    fresh_home(Path(home))
    from tasks.telemetry.ingest import ingest_telemetry_file
    from tasks.warehouse import connect

    loaded = Configured()
    con = connect(loaded.resources.warehouse)
    aliases, options = loaded.load_tables(con), loaded.telemetry_options()
    before_bytes = checkpointed_size(con)
    with timed() as t:
        outcome = ingest_telemetry_file(con, Path(path), aliases, datetime.now(UTC), **options)
    storage = storage_figures(con, Path(home), before_bytes)
    if outcome.status != "loaded":
        raise RuntimeError(f"{path}: {outcome.status}: {outcome.error}")
    return {"seconds": t["s"], "cpu_s": t["cpu_s"], "rows_read": outcome.rows_read, "rows_loaded": outcome.rows_loaded,
            "rows_quarantined": outcome.rows_quarantined, **storage}


def run(cfg: BenchConfig) -> list[Row]:
    rows = []
    for fmt in ("csv", "parquet"):
        for n in cfg.data_sizes:
            path = cfg.work_dir / "telemetry" / f"runs_{n}.{fmt}"
            if not path.exists():
                write_telemetry(path, n)
            result = run_step("telemetry:ingest", path=str(path), home=str(cfg.work_dir / "telemetry" / f"home-{n}"))
            floor = run_step("floors:load_file", path=str(path),
                             database=str(cfg.work_dir / "telemetry" / "floor.duckdb"))
            store = run_step("floors:store_file", path=str(path),
                             database=str(cfg.work_dir / "telemetry" / "store.duckdb"), kind="telemetry")
            rows.append(Row(
                SECTION, f"ingest_telemetry_file ({fmt}) vs read_{fmt}", n, result["seconds"], floor["seconds"],
                result["peak_mb"], floor["peak_mb"],
                f"{result['rows_loaded']} loaded, {result['rows_quarantined']} quarantined (no num_gpus); "
                f"{path.stat().st_size / 1e6:.0f} MB; {storage_note(result)}",
            ))
            rows.append(Row(SECTION, f"ingest_telemetry_file ({fmt}) vs {STORE_FLOOR}", n, result["seconds"],
                            store["seconds"], result["peak_mb"], store["peak_mb"],
                            store_floor_note(store, floor, "typed runs")))
    return rows
