"""`python -m bench` (`make bench`): every benchmark, then the results table in bench/results/latest.md.

Sizes come from the environment (defaults = the issue's sizes):
  BENCH_MAX_ROWS        largest price / telemetry file (10^4 .. this, powers of ten; default 1000000)
  BENCH_TRAIN_MAX_ROWS  largest training set (10^3 .. this; default 100000)
  BENCH_FIT_BUDGET_S    a candidate whose next size is projected to fit slower than this is stopped (default 30)
  BENCH_RANK_OFFERS     current offers in the ranking run (default 100000)
  BENCH_RANK_WORKLOADS  workloads in the ranking run (default 10, i.e. 10^6 rows: at 100 workloads = 10^7 rows
                        the ranking SQL needs > 20 GB of RAM, see the README)
  BENCH_ONLY            comma-separated subset of: prices, telemetry, training, ranking, pubscale, nightly, fetch,
                        offer, dask
  BENCH_PUBSCALE_OFFERS extra offers on the bundled night in the publish-at-scale section (default 1200000,2400000)
  BENCH_PUBSCALE_FLOOR_MEMORY  DuckDB's cap for that section's floor (default 4GB)
  BENCH_DASK_WORKERS    workers of the parallel ingest runners in section 7: threads, Dask processes (default 2)
  BENCH_FETCH_MB        size of the generated AWS offer file fetched and ingested (default 1024)
  BENCH_OFFER_BYTES     size of the generated AWS offer CSV of section 1b (default 2000000000, i.e. 2 GB)
  BENCH_WORK_DIR        generated files and state folders (default bench/results/work)
"""

from __future__ import annotations

import json
import os
import platform
import time
import traceback
from datetime import UTC, datetime

from bench import dask_ingest, fetch, nightly, prices, pubscale, ranking, telemetry, training
from bench.common import RESULTS_DIR, BenchConfig, Row
from bench.report import markdown, targets

SECTIONS = {
    "prices": prices.run,
    "offer": prices.run_offer,
    "telemetry": telemetry.run,
    "training": training.run,
    "ranking": ranking.run,
    "pubscale": pubscale.run,
    "nightly": nightly.run,
    "fetch": fetch.run,
    "dask": dask_ingest.run,
}


def main() -> int:
    cfg = BenchConfig()
    only = [s.strip() for s in os.environ.get("BENCH_ONLY", "").split(",") if s.strip()] or list(SECTIONS)
    unknown = [s for s in only if s not in SECTIONS]
    if unknown:
        raise SystemExit(f"BENCH_ONLY: unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    cfg.work_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows: list[Row] = []
    failures = 0
    for name in only:
        section_started = time.perf_counter()
        print(f"[bench] {name} ...", flush=True)
        try:
            rows += SECTIONS[name](cfg)
        except Exception as error:  # one failing section must not hide the others' figures
            failures += 1
            traceback.print_exc()
            rows.append(Row(name, "FAILED", None, None, note=str(error).strip().splitlines()[-1][:200]))
        print(f"[bench] {name} done in {time.perf_counter() - section_started:.0f} s", flush=True)
        write_results(rows, cfg, started)  # after every section: a later failure keeps what was measured
    print(write_results(rows, cfg, started))
    print(f"written to {RESULTS_DIR / 'latest.md'}")
    return 1 if failures else 0


def write_results(rows: list[Row], cfg: BenchConfig, started: float) -> str:
    header = (f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, {os.cpu_count()} CPUs, "
              f"Python {platform.python_version()}; sizes: data up to {cfg.max_rows} rows, training up to "
              f"{cfg.train_max_rows}, ranking {cfg.rank_offers} offers x {cfg.rank_workloads} workloads; "
              f"whole benchmark {time.perf_counter() - started:.0f} s.")
    text = markdown(rows, header, targets(rows, cfg))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "latest.md").write_text(text, encoding="utf-8")
    (RESULTS_DIR / "latest.json").write_text(json.dumps([r.to_dict() for r in rows], indent=1), encoding="utf-8")
    return text


if __name__ == "__main__":
    raise SystemExit(main())
