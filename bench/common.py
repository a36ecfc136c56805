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

from tasks import config_files
from tasks.contract.normalise import load_vocabulary
from tasks.ranking.workloads import load_workloads
from tasks.reference import load_reference_tables, read_aliases, reference_paths
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
    """`with timed() as t: ...` then t["s"] holds the wall seconds and t["cpu_s"] the process's CPU seconds (user +
    system, every thread: DuckDB's included), steadier than wall time on a shared machine."""
    box: dict[str, float] = {}
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        yield box
    finally:
        box["s"] = time.perf_counter() - started
        box["cpu_s"] = time.process_time() - cpu_started


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
    con.execute("checkpoint")
    con.close()
    landing = home / "landing"
    landed = sum(p.stat().st_size for p in landing.rglob("*") if p.is_file()) if landing.exists() else 0
    return {"warehouse_growth_mb": (Configured().resources.warehouse.stat().st_size - before_bytes) / 1e6,
            "landed_mb": landed / 1e6}


def checkpointed_size(con: Any) -> int:
    """The warehouse file's size in bytes once everything so far is written into it."""
    con.execute("checkpoint")
    return Configured().resources.warehouse.stat().st_size


class Configured:
    """The configuration and resources as an entry point loads them (config/ and GPUCOST_HOME as the environment
    says now), and what a measured step passes the plain functions it times."""

    def __init__(self) -> None:
        self.config_files = config_files
        self.settings = config_files.settings()
        self.resources = config_files.resources(self.settings)
        self.reference = self.settings.reference

    @property
    def reference_files(self) -> dict[str, Path]:
        return reference_paths(self.reference)

    def load_tables(self, con: Any) -> Any:
        """The reference tables loaded into `con`; returns the GPU aliases."""
        load_reference_tables(con, self.reference_files)
        return read_aliases(self.reference_files["gpu_aliases"])

    def price_options(self) -> dict[str, Any]:
        """The keyword arguments of tasks.prices.ingest.ingest_price_file, as the price flow passes them."""
        return {"validation": self.settings.validation.prices, "reference_dir": self.resources.reference,
                "limits": self.settings.ingest.limits(self.resources.home)}

    def telemetry_options(self) -> dict[str, Any]:
        """The keyword arguments of tasks.telemetry.ingest.ingest_telemetry_file, as the telemetry flow passes them."""
        telemetry = self.config_files.telemetry()
        return {"vocabulary": load_vocabulary(telemetry), "validation": telemetry.validation,
                "limits": self.settings.ingest.limits(self.resources.home)}

    def price_ingest(self) -> Any:
        """tasks.fetch.handoff.PriceIngest as the fetch flow builds it."""
        from tasks.fetch.handoff import PriceIngest  # memory: the ingest's modules load in the steps that ingest

        return PriceIngest(self.settings.validation.prices, self.reference,
                           self.settings.ingest.limits(self.resources.home))

    def contract(self) -> Any:
        """tasks.model.contract_rows.ContractFeatures as the train and publish flows build it."""
        # memory: the model's modules (pandas) load only in the steps that train or publish
        from tasks.model.contract_rows import ContractFeatures

        return ContractFeatures.configured(self.config_files.telemetry(), self.reference)

    def night(self) -> dict[str, Any]:
        """The keyword arguments of tasks.publishing.night.publish_night, as the publish flow passes them."""
        ranking = self.config_files.ranking()
        return {"ranking": ranking, "reference": self.reference,
                "workloads": load_workloads(self.config_files.workloads(), ranking)}
