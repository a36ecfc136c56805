"""`make bench-accuracy`: on the bundled telemetry, leave-one-GPU-out and leave-one-source-out median APE of
every configured candidate (and of the registered champion's spec, when there is one) next to the constant-MFU
physics baseline fitted on the same training folds, plus the 80% interval coverage per grouping and per fold
(each fold against normalised-conformal intervals calibrated without its rows) and the widening per flag.

Dense and MoE runs are reported apart too (median APE and interval coverage per grouping), with a
leave-one-model-out check on the MoE runs and the worst held-out MoE runs.

Runs entirely in memory (no warehouse, no MLflow writes): python -m bench.accuracy [--candidates a,b]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from bench.common import Configured
from tasks import config_files
from tasks.contract.features import refresh_feature_table
from tasks.model.candidates import BASELINE_KIND, CandidateSpec, build_pipeline, candidate_specs
from tasks.model.config import Models
from tasks.model.design import tokens_per_sec
from tasks.model.evaluation import TargetSpec, cv_folds, prepare_training_data, select_best
from tasks.model.intervals import NOVELTY_CLASSES
from tasks.model.tracking import CHAMPION, TAG_SPEC, connect_tracking, version_by_alias
from tasks.model.training import evaluate_candidate, moe_rows, read_training_features
from tasks.sources import configured_telemetry_paths
from tasks.telemetry.ingest import ingest_telemetry_file
from tasks.warehouse import connect


def bundled_features() -> pl.DataFrame:
    """The configured telemetry files through the real ingest (validation, quarantine) and feature SQL."""
    con = connect(Path(":memory:"))
    loaded = Configured()
    try:
        aliases, options, now = loaded.load_tables(con), loaded.telemetry_options(), datetime.now(UTC)
        for path in configured_telemetry_paths(config_files.sources()):
            ingest_telemetry_file(con, path, aliases, now, **options)
        refresh_feature_table(con, loaded.reference)
        return read_training_features(con)
    finally:
        con.close()


def registered_champion_spec() -> tuple[str, CandidateSpec] | None:
    uri = Configured().resources.tracking_uri
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).exists():
        return None
    champion = version_by_alias(connect_tracking(uri, create_experiment=False).client, CHAMPION)
    if champion is None or not champion.tags.get(TAG_SPEC):
        return None
    return f"v{champion.version}", CandidateSpec.from_json(champion.tags[TAG_SPEC])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.accuracy")
    parser.add_argument("--candidates", help="comma-separated candidate names (default: all configured)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    config = config_files.models()
    started = time.perf_counter()
    data = prepare_training_data(bundled_features())
    target = TargetSpec.from_config(config.target)
    folds = cv_folds(data, config.cv.groupings, config.cv.max_folds)
    registered = registered_champion_spec()
    specs = _specs_to_evaluate(config, args.candidates, registered)
    evaluations = []
    for spec in specs:
        t0 = time.perf_counter()
        evaluations.append((evaluate_candidate(spec, data, folds, target, config,
                                               with_importance=False),
                            time.perf_counter() - t0))
    baseline = next(e for e, _ in evaluations if e.spec.kind == BASELINE_KIND)
    winner, losses = select_best([(e.spec.name, e.cv, e.score) for e, _ in evaluations], baseline.spec.name,
                                 config.selection.metric)
    champion_spec = registered[1] if registered else next(e.spec for e, _ in evaluations if e.spec.name == winner)
    champion_label = (f"registered champion {registered[0]}" if registered
                      else "best configured candidate no worse than the baseline on any grouping")
    groupings = list(folds)
    level = config.intervals.level

    print(f"# Token-efficiency accuracy on the bundled telemetry ({data.rows} runs, "
          f"{', '.join(f'{len(f)} {g} folds' for g, f in folds.items())})\n")
    print("median APE of tokens/s per GPU, pooled over held-out folds; coverage of the "
          f"{level:.0%} interval on held-out folds (each fold against an interval calibrated without its rows)\n")
    _print_candidates(evaluations, groupings, champion_spec, baseline)
    _print_dense_and_moe(evaluations, groupings, data, level)

    champion = next((e for e, _ in evaluations if e.spec == champion_spec), None)
    if champion is None:   # --candidates left the champion out: report the best evaluated one
        champion = min((e for e, _ in evaluations), key=lambda e: e.score)
        champion_label = "best evaluated candidate"
    print(f"\n## {champion_label} ({champion.spec.name}) vs constant-MFU baseline, per held-out fold\n")
    # the median predicted / measured of a held-out group: how far the group is off as a whole (its bias), which
    # an interval must cover on top of the scatter of its rows
    print(f"| grouping | held out | runs | champion median APE | champion median predicted / measured | "
          f"baseline median APE | {level:.0%} interval coverage |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for g in groupings:
        _print_folds(champion, baseline, data, g)
    for name, lost in losses.items():
        print(f"\n{name} cannot be champion: worse than the constant-MFU baseline on {', '.join(lost)}")
    print(f"\n## Dense runs per held-out fold ({champion.spec.name})\n")
    print(f"| grouping | held out | dense runs | median APE | median predicted / measured | "
          f"{level:.0%} interval coverage |")
    print("|---|---|---:|---:|---:|---:|")
    for g in groupings:
        _print_dense_folds(champion, data, g)
    _print_learned(champion, data)
    _print_intervals(champion, level)
    g = groupings[0]
    predicted = tokens_per_sec(champion.cv[g].oof_log_mfu, data.physics_bound)
    ape = abs(predicted / data.tokens_per_sec - 1)
    print(f"\n## Worst five held-out runs (leave-one-{g}-out)\n")
    print("| run_id | source | gpu | GPUs | params (B) | seq | precision | measured | predicted |\n"
          "|---|---|---|---:|---:|---:|---|---:|---:|")
    for i in ape.argsort()[::-1][:5]:
        row = data.frame.iloc[i]
        print(f"| {row['run_id']} | {row['source_group']} | {row['gpu']} | {row['num_gpus']} | {row['params_b']:g} | "
              f"{row['seq_len']} | {row['precision']} {row['precision_recipe']} | {data.tokens_per_sec[i]:.0f} | "
              f"{predicted[i]:.0f} |")
    print_moe_checks(champion, data, target, config, g)
    print(f"\ninterval coverage ({level:.0%} target): "
          + ", ".join(f"{g} {champion.coverage[g]:.1%}" for g in groupings)
          + f"\ntotal {time.perf_counter() - started:.1f} s")
    return 0


def _specs_to_evaluate(
    config: Models, candidates: str | None, registered: tuple[str, CandidateSpec] | None,
) -> list[CandidateSpec]:
    """The configured candidates (only those named in --candidates, and always the baseline), and the registered
    champion's spec when it is none of them."""
    specs = candidate_specs(config)
    if candidates:
        wanted = set(candidates.split(","))
        specs = [s for s in specs if s.name in wanted or s.kind == BASELINE_KIND]
    if registered and registered[1] not in specs:
        specs.append(registered[1])
    return specs


def _print_candidates(evaluations, groupings: list[str], champion_spec, baseline) -> None:  # bench printing
    head = " | ".join(f"leave-one-{g}-out" for g in groupings)
    cover = " | ".join(f"coverage ({g})" for g in groupings)
    print(f"| candidate | {head} | score | {cover} | CV seconds |")
    print("|---|" + "---:|" * (2 * len(groupings) + 2))
    for evaluation, seconds in sorted(evaluations, key=lambda item: item[0].score):
        marks = (" (champion)" if evaluation.spec == champion_spec else "") + (
            " (baseline)" if evaluation is baseline else "")
        apes = " | ".join(f"{evaluation.median_ape(g):.1%}" for g in groupings)
        covs = " | ".join(f"{evaluation.coverage[g]:.1%}" for g in groupings)
        print(f"| {evaluation.spec.name}{marks} | {apes} | {evaluation.score:.4f} | {covs} | {seconds:.1f} |")


def _share(value: float) -> str:
    """A share as a percentage, or "-" where the grouping holds out no row of that kind (MoE family: no dense)."""
    return "-" if math.isnan(value) else f"{value:.1%}"


def _print_dense_and_moe(evaluations, groupings: list[str], data, level: float) -> None:  # bench printing
    moe = moe_rows(data.frame)
    lora = int(data.frame["workload"].isin(["lora", "qlora"]).sum())
    print(f"\n## Dense ({int((~moe).sum())} runs, {lora} of them LoRA/QLoRA) and MoE ({int(moe.sum())} runs) apart: "
          f"held-out median APE and {level:.0%} interval coverage\n")
    head = " | ".join(f"{g}: all / dense / MoE / LoRA APE | {g}: all / dense / MoE / LoRA coverage" for g in groupings)
    print(f"| candidate | {head} |")
    print("|---|" + "---|" * (2 * len(groupings)))
    for evaluation, _ in sorted(evaluations, key=lambda item: item[0].score):
        cells = []
        for g in groupings:
            kind = evaluation.by_kind(g, data)
            apes = (evaluation.median_ape(g), kind["dense_median_ape"], kind["moe_median_ape"],
                    kind["lora_median_ape"])
            covs = (evaluation.coverage.get(g, float("nan")), kind["dense_interval_coverage"],
                    kind["moe_interval_coverage"], kind["lora_interval_coverage"])
            cells += [" / ".join(map(_share, apes)), " / ".join(map(_share, covs))]
        print(f"| {evaluation.spec.name} | " + " | ".join(cells) + " |")


def _print_folds(champion, baseline, data, g: str) -> None:  # bench printing
    """The champion against the baseline on each held-out fold of grouping `g`, then pooled."""
    ratio = tokens_per_sec(champion.cv[g].oof_log_mfu, data.physics_bound) / data.tokens_per_sec
    for fold, ours, theirs in zip(champion.cv[g].folds, champion.cv[g].fold_metrics,
                                  baseline.cv[g].fold_metrics, strict=True):
        covered = champion.fold_coverage.get(g, {}).get(fold.index, float("nan"))
        print(f"| {g} | {fold.held_out} | {len(fold.test)} | {ours['median_ape']:.1%} | "
              f"{float(np.median(ratio[fold.test])):.2f} | {theirs['median_ape']:.1%} | {covered:.1%} |")
    by_group = list(champion.fold_coverage.get(g, {}).values())
    print(f"| {g} | **all (pooled)** | {data.rows} | **{champion.median_ape(g):.1%}** | | "
          f"**{baseline.median_ape(g):.1%}** | **{champion.coverage[g]:.1%}** (each held-out group once: "
          f"{float(np.mean(by_group)) if by_group else float('nan'):.1%}) |")


def _print_dense_folds(champion, data, g: str) -> None:  # bench printing
    """The champion on each held-out fold's dense runs (the MoE runs of a fold say nothing of dense transfer)."""
    ratio = tokens_per_sec(champion.cv[g].oof_log_mfu, data.physics_bound) / data.tokens_per_sec
    dense = ~moe_rows(data.frame)
    hits = champion.hits.get(g, np.full(data.rows, np.nan))
    for fold in champion.cv[g].folds:
        rows = np.asarray(fold.test)[dense[fold.test]]
        if len(rows) == 0:
            continue
        scored = rows[np.isfinite(hits[rows])]
        covered = float(np.mean(hits[scored])) if len(scored) else float("nan")
        print(f"| {g} | {fold.held_out} | {len(rows)} | {float(np.median(np.abs(ratio[rows] - 1))):.1%} | "
              f"{float(np.median(ratio[rows])):.2f} | {covered:.1%} |")


def _print_learned(champion, data) -> None:  # bench printing
    fitted = build_pipeline(champion.spec).fit(data.frame, data.log_mfu)[-1]
    structured = getattr(fitted, "structured_", fitted)
    if hasattr(structured, "learned"):
        print(f"\n## Learned parameters of {champion.spec.name} (all {data.rows} runs)\n")
        print("| parameter | value | unit |\n|---|---:|---|")
        for name, (value, unit) in structured.learned().items():
            print(f"| {name} | {value:.4g} | {unit} |")


def _print_intervals(champion, level: float) -> None:  # bench printing
    if champion.conformal is None:
        return
    conformal = champion.conformal
    print(f"\n## {level:.0%} intervals of {champion.spec.name} (normalised conformal, "
          f"{conformal.calibration_rows} held-out residuals)\n")
    print(f"inside the training data: x/÷ {math.exp(conformal.half_width([''])[0]):.3f} "
          f"(q {conformal.quantile:.3f} x scale {math.exp(conformal.log_scale):.4f} in log space)\n")
    for name, q in zip(NOVELTY_CLASSES, getattr(conformal, "class_quantiles", ()), strict=False):
        example = {"moe_new_model": ["moe,unseen_model", "moe,unseen_model,unseen_framework,unseen_gpu"],
                   "moe_seen_model": ["moe"]}[name]
        widths = ", ".join(f"{flags or 'no flag'}: x/÷ {math.exp(conformal.half_width([flags])[0]):.3f}"
                           for flags in example)
        print(f"novelty class {name}: q {q:.3f} ({widths})\n")
    print("| extrapolation flag | factor on the log half-width |\n|---|---:|")
    for flag, factor in conformal.widening().items():
        print(f"| {flag} | {factor:.3f} |")


def print_moe_checks(champion, data, target, config, grouping: str) -> None:  # bench printing
    """The worst held-out MoE runs under `grouping`, and leave-one-model-out over the MoE runs (every run of
    one MoE model held out, the model trained on all other runs)."""
    import numpy as np

    from tasks.model.evaluation import Fold, cross_validate

    moe = moe_rows(data.frame)
    predicted = tokens_per_sec(champion.cv[grouping].oof_log_mfu, data.physics_bound)
    ratio = predicted / data.tokens_per_sec
    ape = abs(ratio - 1)
    print(f"\n## Worst five held-out MoE runs (leave-one-{grouping}-out, {champion.spec.name})\n")
    print("| run_id | params total / active | gpu | GPUs | parallelism | precision | measured | predicted "
          "| predicted / measured |\n|---|---|---|---:|---|---|---:|---:|---:|")
    for i in [i for i in ape.argsort()[::-1] if moe[i]][:5]:
        row = data.frame.iloc[i]
        print(f"| {row['run_id']} | {row['params_b']:g}B / {row['active_params_b']:g}B | {row['gpu']} | "
              f"{row['num_gpus']} | {row['parallelism']} | {row['precision']} | {data.tokens_per_sec[i]:.0f} | "
              f"{predicted[i]:.0f} | {ratio[i]:.2f} |")
    # a model = its (total, active) parameter count (the feature rows carry no model name)
    names = np.array([f"{t:g}B total, {a:g}B active" for t, a in zip(data.frame["params_b"],
                                                                   data.frame["active_params_b"], strict=True)])
    folds = []
    for index, name in enumerate(sorted(set(names[moe]))):
        test = np.flatnonzero(moe & (names == name))
        folds.append(Fold(index=index, held_out=name, train=np.flatnonzero(names != name), test=test))
    result = cross_validate(champion.spec, data, "model_name", folds, target)
    predicted = tokens_per_sec(result.oof_log_mfu, data.physics_bound)
    print(f"\n## Leave-one-MoE-model-out ({champion.spec.name}): each MoE model's runs predicted by a fit "
          "on every other run\n")
    print("| held-out model | runs | median APE | median predicted / measured |\n|---|---:|---:|---:|")
    all_ape = []
    for fold in folds:
        r = predicted[fold.test] / data.tokens_per_sec[fold.test]
        all_ape.extend(abs(r - 1))
        print(f"| {fold.held_out} | {len(fold.test)} | {np.median(abs(r - 1)):.1%} | {np.median(r):.2f} |")
    print(f"| **all MoE runs** | {len(all_ape)} | **{np.median(all_ape):.1%}** | |")


if __name__ == "__main__":
    sys.exit(main())
