"""3. Training time as the telemetry grows (10^3 .. 10^5 runs): each configured candidate fitted once on the
design matrix (tasks.model public functions), the growth exponent of each (log-log slope), and the whole
training step (`train_and_register`: cross-validation of every candidate, MLflow logging, registration)
at the smallest size. There is no DuckDB floor for model fitting."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path
from typing import Any

from bench.common import BenchConfig, Configured, Row, fresh_home, run_step, timed
from bench.generate import telemetry_runs

SECTION = "3. training"


def training_features(rows: int) -> Any:
    """Feature rows (contract 1) for `rows` generated runs: normalise_rows -> build_features (not timed)."""
    from tasks.contract.features import build_features
    from tasks.contract.normalise import normalise_rows
    from tasks.warehouse import connect

    loaded = Configured()
    con = connect(loaded.resources.warehouse)
    aliases = loaded.load_tables(con)
    runs = normalise_rows(con, telemetry_runs(rows), aliases, loaded.telemetry_options()["vocabulary"])
    features = build_features(con, runs, str(loaded.reference.path("model_shapes")),
                              str(loaded.reference.path("matmul_ceilings")))
    con.close()
    return features


def fit_candidate(rows: int, home: str, name: str) -> dict[str, Any]:
    """Measured step: fit one candidate once on all rows (feature building not timed)."""
    fresh_home(Path(home))
    from tasks import config_files
    from tasks.model.candidates import build_pipeline, candidate_specs
    from tasks.model.evaluation import prepare_training_data

    data = prepare_training_data(training_features(rows))
    spec = next(s for s in candidate_specs(config_files.models()) if s.name == name)
    with timed() as t:
        build_pipeline(spec).fit(data.frame, data.log_mfu)
    return {"seconds": t["s"], "training_rows": data.rows}


def candidate_names() -> list[str]:
    from tasks import config_files
    from tasks.model.candidates import candidate_specs

    return [s.name for s in candidate_specs(config_files.models())]


def train_whole(rows: int, home: str) -> dict[str, Any]:
    """Measured step: train_and_register (CV of every candidate, MLflow runs, registration) on `rows` runs."""
    fresh_home(Path(home))
    from tasks.model.training import train_and_register

    features = training_features(rows)
    loaded = Configured()
    models, contract = loaded.config_files.models(), loaded.contract()
    with timed() as t:
        outcome = train_and_register(features, models, loaded.resources, contract)
    return {"seconds": t["s"], "best": outcome.best, "alias": outcome.alias, "training_rows": outcome.rows}


def slope(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(seconds) on log(rows): time ~ rows^slope."""
    if len(points) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(max(s, 1e-6)) for _, s in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def run(cfg: BenchConfig) -> list[Row]:
    rows: list[Row] = []
    history: dict[str, list[tuple[int, float]]] = {}
    skipped: dict[str, str] = {}
    sizes = cfg.train_sizes
    for n in sizes:
        for name in candidate_names():
            if name in skipped:
                continue
            try:
                # a fit slower than the budget is stopped (process killed) and the candidate not run larger
                result = run_step("training:fit_candidate", timeout=cfg.fit_budget_s + 15, rows=n, name=name,
                                  home=str(cfg.work_dir / "training" / f"home-{n}"))
            except subprocess.TimeoutExpired:
                skipped[name] = f"stopped at {n} rows: fit took over {cfg.fit_budget_s:.0f} s (BENCH_FIT_BUDGET_S)"
                rows.append(Row(SECTION, f"fit {name}", n, None, note=skipped[name]))
                continue
            history.setdefault(name, []).append((n, result["seconds"]))
            rows.append(Row(SECTION, f"fit {name}", n, result["seconds"], peak_mb=result["peak_mb"],
                            note="one fit on all rows (own process)"))
            if result["seconds"] > cfg.fit_budget_s:
                skipped[name] = f"not run above {n} rows: fit took over {cfg.fit_budget_s:.0f} s"
    for name, points in history.items():
        exponent = slope(points)
        note = f"time ~ rows^{exponent:.2f} over {points[0][0]}..{points[-1][0]} rows" if exponent is not None else ""
        if name in skipped:
            note += f"; {skipped[name]}"
        rows.append(Row(SECTION, f"growth exponent {name}", None, None, note=note))
    smallest = sizes[0]
    whole = run_step("training:train_whole", rows=smallest, home=str(cfg.work_dir / "training" / "home-whole"))
    rows.append(Row(SECTION, "train_and_register (all candidates, CV, MLflow)", smallest, whole["seconds"],
                    peak_mb=whole["peak_mb"], note=f"best {whole['best']} -> {whole['alias']}"))
    return rows
