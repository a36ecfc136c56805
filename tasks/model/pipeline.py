"""Training in stages, on the typed config and without MLflow: prepare the rows and splits, cross-validate each
candidate two ways (grouped by GPU, grouped by source) with normalised-conformal intervals, select the best
against the constant-MFU baseline, fit it on every row and calibrate what travels with it (tasks.model.serving).
What is logged, registered and promoted is tasks.model.registry; tasks.model.training runs the stages."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import polars as pl
from sklearn.inspection import permutation_importance
from sklearn.pipeline import Pipeline

from tasks.model.candidates import BASELINE_KIND, CandidateSpec, build_pipeline, candidate_specs
from tasks.model.config import Intervals, Models
from tasks.model.contract_rows import layout_problem
from tasks.model.coverage import TrainingCoverage
from tasks.model.design import model_keys, moe_rows, tokens_per_sec
from tasks.model.evaluation import (
    Flagger,
    Fold,
    GroupedCV,
    TargetSpec,
    TrainingData,
    cross_validate,
    cv_folds,
    grouped_folds,
    prepare_training_data,
    select_best,
    selection_score,
)
from tasks.model.intervals import (
    CalibrationPool,
    CalibrationSettings,
    IntervalOffsets,
    NormalisedConformal,
    normalised_fold_coverage,
    normalised_fold_hits,
)
from tasks.model.serving import TokenEfficiencyModel
from tasks.warehouse import query

log = logging.getLogger("gpucost.train")

MIN_TRAINING_ROWS = 10


class NotEnoughTelemetryError(RuntimeError):
    """The feature table has too few usable rows (or groups) to cross-validate."""


@dataclass
class CandidateEvaluation:
    spec: CandidateSpec
    cv: dict[str, GroupedCV]                       # grouping -> out-of-fold results
    score: float                                   # selection score (lower is better)
    coverage: dict[str, float] = field(default_factory=dict)   # grouping -> cross-fold interval coverage
    fold_coverage: dict[str, dict[int, float]] = field(default_factory=dict)  # grouping -> fold -> coverage
    hits: dict[str, np.ndarray] = field(default_factory=dict)   # grouping -> per row 1/0 inside its interval
    conformal: NormalisedConformal | None = None   # intervals calibrated on every held-out residual
    importance: dict[str, float] = field(default_factory=dict)  # input column -> permutation importance
    fitted: Pipeline | None = None                 # fitted on all rows

    def median_ape(self, grouping: str) -> float:
        return self.cv[grouping].pooled["median_ape"]

    def by_kind(self, grouping: str, data: TrainingData) -> dict[str, float]:
        """Pooled held-out median APE and interval coverage of the dense and the MoE runs apart, and of the LoRA /
        QLoRA runs (dense fine-tuning, a part of the dense ones): {"dense_median_ape", "moe_median_ape",
        "lora_median_ape", "dense_interval_coverage", "moe_interval_coverage", "lora_interval_coverage"} (NaN where
        a kind has no rows)."""
        result = self.cv[grouping]
        predicted = tokens_per_sec(result.oof_log_mfu, data.physics_bound)
        ape = np.abs(predicted / data.tokens_per_sec - 1.0)
        moe = moe_rows(data.frame)
        hits = self.hits.get(grouping, np.full(data.rows, np.nan))
        out = {}
        lora = (data.frame["workload"].isin(["lora", "qlora"]).to_numpy() if "workload" in data.frame
                else np.zeros(data.rows, dtype=bool))
        for kind, rows in (("dense", ~moe), ("moe", moe), ("lora", lora)):
            finite = rows & np.isfinite(ape)
            out[f"{kind}_median_ape"] = float(np.median(ape[finite])) if finite.any() else float("nan")
            scored = rows & np.isfinite(hits)
            out[f"{kind}_interval_coverage"] = float(hits[scored].mean()) if scored.any() else float("nan")
        return out


@dataclass(frozen=True)
class Prepared:
    """Stage 1's output: the usable rows, the splits of every grouping, the target's clip and the candidates."""

    data: TrainingData
    folds: dict[str, list[Fold]]
    target: TargetSpec
    specs: list[CandidateSpec]


@dataclass(frozen=True)
class Selection:
    """Stage 3's output: the winner and the candidates not eligible (worse than the baseline on a grouping)."""

    best: CandidateEvaluation
    baseline: CandidateEvaluation
    losses: dict[str, list[str]]


def read_training_features(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """features.training_runs rows with a target (built by the telemetry ingest), less the runs whose layout their
    model cannot have (`layout_problem`: what `gpucost predict` refuses to score is not learned from either)."""
    try:
        frame: pl.DataFrame = query(con, "model/training_features").pl()
    except duckdb.CatalogException as error:
        raise NotEnoughTelemetryError(
            "features.training_runs does not exist yet: run `gpucost ingest telemetry` first") from error
    problems = pl.Series([layout_problem(*values) for values in
                          frame.select("is_moe", "moe_experts", "parallelism").iter_rows()], dtype=pl.String)
    if problems.null_count() < frame.height:
        refused = frame.filter(problems.is_not_null()).with_columns(problems.drop_nulls().alias("problem"))
        log.warning("kept out of training: %d run(s) whose layout their model cannot have: %s", refused.height,
                    "; ".join(f"{r} ({p})" for r, p in refused.select("run_id", "problem").head(5).iter_rows())
                    + ("; ..." if refused.height > 5 else ""))
        frame = frame.filter(problems.is_null())
    return frame


def target_of(config: Models) -> TargetSpec:
    return TargetSpec.from_config(config.target)


def prepare(features: pl.DataFrame, config: Models) -> Prepared:
    """Stage 1: the usable rows (at least MIN_TRAINING_ROWS), their splits under every grouping, the candidates."""
    data = prepare_training_data(features)
    if data.rows < MIN_TRAINING_ROWS:
        raise NotEnoughTelemetryError(f"{data.rows} usable training rows in features.training_runs "
                                      f"(need {MIN_TRAINING_ROWS}); ingest telemetry first")
    try:
        folds = cv_folds(data, config.cv.groupings, int(config.cv.max_folds))
    except ValueError as error:
        raise NotEnoughTelemetryError(str(error)) from error
    return Prepared(data=data, folds=folds, target=target_of(config), specs=candidate_specs(config))


def _neg_mae_where_defined(estimator: Any, X: pd.DataFrame, y: np.ndarray) -> float:
    """Permutation-importance score: minus the mean absolute log-MFU error over rows with a prediction (a
    shuffled column can pair a GPU with a precision it has no peak for, e.g. an A100 with fp8: no prediction)."""
    predicted = np.asarray(estimator.predict(X), dtype="float64")
    defined = np.isfinite(predicted)
    return -float(np.mean(np.abs(predicted[defined] - np.asarray(y)[defined]))) if defined.any() else float("-inf")


def extrapolation_flagger(intervals: Intervals) -> Flagger:
    """Flags of held-out rows relative to a fold's training rows, exactly as `gpucost predict` flags new rows
    relative to all training rows (TrainingCoverage.flags)."""
    min_moe_rows = int(intervals.min_moe_rows)

    def flag(train: pd.DataFrame, test: pd.DataFrame) -> list[str]:
        seen = test["gpu"].isin(set(train["gpu"].dropna().astype(str))).to_numpy()
        return TrainingCoverage.of_training(train, min_moe_rows).flags(test, seen)

    return flag


def configuration_groups(frame: pd.DataFrame) -> np.ndarray:
    """A configuration = a model size of a source: held out together, its rows are new setups of seen sources
    (mostly inside the training data: the residuals that calibrate rows without extrapolation flags)."""
    return (frame["source_group"].fillna("unknown").astype(str) + "|"
            + frame["params_b"].round(1).astype(str)).to_numpy()


def calibration_settings(intervals: Intervals) -> CalibrationSettings:
    return {"min_flag_rows": int(intervals.min_flag_rows),
            "default_widening": float(intervals.widen_factor),
            "residual_floor": float(intervals.residual_floor)}


def calibrate_intervals(evaluation: CandidateEvaluation, data: TrainingData, target: TargetSpec,
                        intervals: Intervals, flagger: Flagger) -> None:
    """Normalised-conformal intervals calibrated on every held-out residual (the groupings' and the held-out
    configurations'), with their honest cross-fold coverage per grouping."""
    level = float(intervals.level)
    known = cross_validate(evaluation.spec, data, "configuration",
                           grouped_folds(configuration_groups(data.frame), int(intervals.known_folds)),
                           target, flagger)
    rows = np.arange(data.rows)
    pool = CalibrationPool.concat([(r.residuals(data), rows, r.row_flags) for r in (*evaluation.cv.values(), known)],
                                  models_of_rows=model_keys(data.frame))
    settings = calibration_settings(intervals)
    for grouping, result in evaluation.cv.items():
        evaluation.hits[grouping] = normalised_fold_hits(
            pool, result.residuals(data), result.row_flags, result.fold_of_row, level, **settings)
        evaluation.coverage[grouping], evaluation.fold_coverage[grouping] = normalised_fold_coverage(
            pool, result.residuals(data), result.row_flags, result.fold_of_row, level, **settings)
    evaluation.conformal = NormalisedConformal.calibrate(pool.residuals, pool.flags, level, models=pool.models,
                                                         **settings)


def fit_with_importance(evaluation: CandidateEvaluation, data: TrainingData, n_repeats: int) -> None:
    """The candidate fitted on every row, and the permutation importance of each input column on that fit."""
    spec = evaluation.spec
    evaluation.fitted = build_pipeline(spec).fit(data.frame, data.log_mfu)
    columns = list(spec.uses_features.input_columns)
    # only the input columns are shuffled; the rest of each row goes back in unshuffled (the structured
    # model reads the physics bound to turn its step time into MFU: without it every prediction was NaN,
    # every importance NaN, and numpy warned on the command line)
    context = data.frame.drop(columns=columns)

    def score(estimator: Any, X: pd.DataFrame, y: np.ndarray) -> float:
        return _neg_mae_where_defined(estimator, pd.concat([X, context.loc[X.index]], axis=1), y)

    result = permutation_importance(evaluation.fitted, data.frame[columns], data.log_mfu, scoring=score,
                                    n_repeats=int(n_repeats), random_state=spec.seed)
    # mean increase of the log-MFU absolute error when the column is shuffled (0 = unused)
    evaluation.importance = {c: float(m) for c, m in zip(columns, result.importances_mean, strict=True)}


def evaluate_candidate(spec: CandidateSpec, data: TrainingData, folds: Mapping[str, list[Fold]],
                       target: TargetSpec, config: Models, with_importance: bool = True,
                       with_intervals: bool = True) -> CandidateEvaluation:
    """Stage 2 for one candidate: grouped CV under every grouping, normalised-conformal intervals calibrated on
    every held-out residual with their honest cross-fold coverage, and (optionally) a full-data fit with
    permutation importance."""
    flagger = extrapolation_flagger(config.intervals) if with_intervals else None
    cv = {grouping: cross_validate(spec, data, grouping, grouping_folds, target, flagger)
          for grouping, grouping_folds in folds.items()}
    evaluation = CandidateEvaluation(spec=spec, cv=cv, score=selection_score(cv, config.selection.metric))
    if flagger is not None:
        calibrate_intervals(evaluation, data, target, config.intervals, flagger)
    if with_importance:
        fit_with_importance(evaluation, data, config.importance.n_repeats)
    return evaluation


def select(evaluations: list[CandidateEvaluation], config: Models) -> Selection:
    """Stage 3: the champion rule of tasks.model.evaluation.select_best over the evaluated candidates."""
    baseline = next(e for e in evaluations if e.spec.kind == BASELINE_KIND)
    winner, losses = select_best([(e.spec.name, e.cv, e.score) for e in evaluations], baseline.spec.name,
                                 config.selection.metric)
    for name, groupings in losses.items():
        log.info("%s is not eligible: worse than the constant-MFU baseline on %s", name, ", ".join(groupings))
    return Selection(best=next(e for e in evaluations if e.spec.name == winner), baseline=baseline, losses=losses)


def fit_model(best: CandidateEvaluation, data: TrainingData, target: TargetSpec, config: Models
              ) -> TokenEfficiencyModel:
    """Stages 4 and 5: the winner fitted on every row, with its normalised-conformal intervals (calibrated here if
    the evaluation did not) and the training coverage its extrapolation flags read."""
    conformal = best.conformal
    if conformal is None:
        best = evaluate_candidate(best.spec, data, {g: cv.folds for g, cv in best.cv.items()}, target, config,
                                  with_importance=False)
        conformal = best.conformal
    assert conformal is not None
    pipeline = best.fitted if best.fitted is not None else build_pipeline(best.spec).fit(data.frame, data.log_mfu)
    seen = tuple(sorted(data.frame["gpu"].dropna().astype(str).unique()))
    # summary offsets (tags, the training report): a row inside the training data and a row on an unseen GPU
    inside, unseen_gpu = conformal.half_width(["", "unseen_gpu"])
    intervals = IntervalOffsets(level=conformal.level, seen_low=-float(inside), seen_high=float(inside),
                                unseen_low=-float(unseen_gpu), unseen_high=float(unseen_gpu))
    coverage = TrainingCoverage.of_training(data.frame, int(config.intervals.min_moe_rows),
                                            float(config.intervals.widen_factor))
    return TokenEfficiencyModel(pipeline=pipeline, spec=best.spec, target=target, intervals=intervals, seen_gpus=seen,
                                coverage=coverage, conformal=conformal)
