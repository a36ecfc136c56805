"""What every benchmark shares: sizes from the environment, a work folder, one subprocess per measured
step (so each step's peak memory is its own), and the rows of the results table.

A measured step is a function `bench.<module>:<name>(**kwargs) -> dict` run by `python -m bench.worker`
in a fresh interpreter; it times its own work (set-up excluded) and the worker adds the process's peak
resident memory (getrusage ru_maxrss, which Linux reports in KiB).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tasks.settings import PROJECT_ROOT

RESULTS_DIR = PROJECT_ROOT / "bench" / "results"
RESULT_MARKER = "BENCH_RESULT "
# The second floor of a file ingest (bench/floors.py:store_file): DuckDB storing the same raw and typed rows
STORE_FLOOR = "store floor"


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(float(value)) if value else default


def sizes(start: int, stop: int) -> list[int]:
    """Powers of ten from `start` to `stop` (inclusive)."""
    out, n = [], start
    while n <= stop:
        out.append(n)
        n *= 10
    return out


@dataclass(frozen=True)
class BenchConfig:
    """Sizes (environment variables, defaults = the issue's sizes) and where work files go."""

    max_rows: int = field(default_factory=lambda: env_int("BENCH_MAX_ROWS", 1_000_000))
    train_max_rows: int = field(default_factory=lambda: env_int("BENCH_TRAIN_MAX_ROWS", 100_000))
    fit_budget_s: float = field(default_factory=lambda: float(env_int("BENCH_FIT_BUDGET_S", 30)))
    rank_offers: int = field(default_factory=lambda: env_int("BENCH_RANK_OFFERS", 100_000))
    rank_workloads: int = field(default_factory=lambda: env_int("BENCH_RANK_WORKLOADS", 10))
    offer_bytes: int = field(default_factory=lambda: env_int("BENCH_OFFER_BYTES", 2_000_000_000))
    work_dir: Path = field(
        default_factory=lambda: Path(os.environ.get("BENCH_WORK_DIR", RESULTS_DIR / "work")).resolve()
    )

    @property
    def data_sizes(self) -> list[int]:
        return sizes(10_000, self.max_rows) or [self.max_rows]

    @property
    def train_sizes(self) -> list[int]:
        return sizes(1_000, self.train_max_rows) or [self.train_max_rows]


@dataclass
class Row:
    """One line of the results table. `floor_s` is DuckDB doing the same job's core, in the same run."""

    section: str
    case: str
    rows: int | None
    pipeline_s: float | None
    floor_s: float | None = None
    peak_mb: float | None = None
    floor_peak_mb: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.pipeline_s is None or not self.floor_s:
            return None
        return self.pipeline_s / self.floor_s

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"ratio": self.ratio}


class StepFailed(RuntimeError):
    pass


def run_step(target: str, env: dict[str, str] | None = None, timeout: float = 1800, **kwargs: Any) -> dict[str, Any]:
    """Run `bench.<module>:<function>(**kwargs)` in a fresh interpreter; its dict plus `peak_mb`."""
    command = [sys.executable, "-m", "bench.worker", target, json.dumps(kwargs, default=str)]
    child_env = os.environ | {"MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore"} | (env or {})
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=child_env, capture_output=True, text=True, timeout=timeout)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            return json.loads(line.removeprefix(RESULT_MARKER))
    tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
    raise StepFailed(f"{target} failed (exit {done.returncode}):\n{tail}")


@contextmanager
def timed() -> Iterator[dict[str, float]]:
    """`with timed() as t: ...` then t["s"] holds the wall seconds."""
    box: dict[str, float] = {}
    started = time.perf_counter()
    try:
        yield box
    finally:
        box["s"] = time.perf_counter() - started


def warm_validation() -> float:
    """Import Great Expectations and build its context once (a one-off per process, reported apart)."""
    with timed() as t:
        from tasks.ingest.validation import _batch_definition

        _batch_definition()
    return t["s"]


def fresh_home(path: Path) -> Path:
    """An empty GPUCOST_HOME, set in this process's environment."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    os.environ["GPUCOST_HOME"] = str(path)
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    return path


def storage_figures(con: Any, home: Path, before_bytes: int) -> dict[str, float]:
    """After an ingest on `con` (closed here): how much the warehouse file grew since `before_bytes` (both
    checkpointed) and how big the landing zone is, in MB."""
    from tasks.settings import paths

    con.execute("checkpoint")
    con.close()
    landing = home / "landing"
    landed = sum(p.stat().st_size for p in landing.rglob("*") if p.is_file()) if landing.exists() else 0
    return {"warehouse_growth_mb": (paths().warehouse.stat().st_size - before_bytes) / 1e6,
            "landed_mb": landed / 1e6}


def checkpointed_size(con: Any) -> int:
    """The warehouse file's size in bytes once everything so far is written into it."""
    from tasks.settings import paths

    con.execute("checkpoint")
    return paths().warehouse.stat().st_size
