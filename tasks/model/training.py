"""Train the token-efficiency model: cross-validate every configured candidate two ways (grouped by GPU,
grouped by source), log each as an MLflow run, register the best with calibrated intervals, and promote it to
`champion` only if it beats the current champion re-scored on the same data and the same splits."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import socket
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import cloudpickle
import duckdb
import mlflow
import numpy as np
import pandas as pd
import polars as pl
import pyarrow
import sklearn
from matplotlib.figure import Figure
from mlflow.data.pandas_dataset import from_pandas
from mlflow.entities import Metric
from mlflow.entities.model_registry import ModelVersion
from mlflow.environment_variables import MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR
from mlflow.exceptions import MlflowException
from sklearn.inspection import permutation_importance
from sklearn.pipeline import Pipeline
from threadpoolctl import threadpool_limits

from tasks import progress
from tasks.model.candidates import BASELINE_KIND, CandidateSpec, build_pipeline, candidate_specs
from tasks.model.config import Models
from tasks.model.contract_rows import ContractFeatures, files_digest, layout_problem
from tasks.model.design import TARGET, tokens_per_sec
from tasks.model.evaluation import (
    METRICS,
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
from tasks.model.serving import (
    TokenEfficiencyModel,
    TokenEfficiencyPyfunc,
    TrainingCoverage,
    contract_signature,
    model_keys,
)
from tasks.model.tracking import (
    CHALLENGER,
    CHAMPION,
    REGISTERED_MODEL,
    TAG_DECISION,
    TAG_DIGEST,
    TAG_FINGERPRINT,
    TAG_NOT_REGISTERED,
    TAG_REASON,
    TAG_SPEC,
    TAG_STATUS_NOTE,
    TAG_WAS_CHAMPION,
    UNCHANGED,
    Tracking,
    connect_tracking,
    version_by_alias,
)
from tasks.processes import pid_alive
from tasks.settings import PROJECT_ROOT, Resources
from tasks.warehouse import query

log = logging.getLogger("gpucost.train")

MIN_TRAINING_ROWS = 10
# Runs this process starts are newer than this; a RUNNING run older than it was left by a killed training.
PROCESS_STARTED_MS = int(time.time() * 1000)
INTERRUPTED_RUN_NOTE = "interrupted: the training process ended before this run finished (found by a later training)"
INTERRUPTED_VERSION_NOTE = "registered by an interrupted training; never promoted"
# Every training run says which process runs it, so that a training sharing a tracking server with others can
# tell a killed training's RUNNING run from one that another team member's process is still working on.
TAG_HOST, TAG_PID = "gpucost.host", "gpucost.pid"
# A RUNNING run of another machine is only taken for interrupted after this long (no training takes hours here).
OTHER_HOST_STALE_AFTER_MS = 24 * 3600 * 1000


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
        """Pooled held-out median APE and interval coverage of the dense and the MoE runs apart:
        {"dense_median_ape", "moe_median_ape", "dense_interval_coverage", "moe_interval_coverage"} (NaN where
        a kind has no rows)."""
        result = self.cv[grouping]
        predicted = tokens_per_sec(result.oof_log_mfu, data.physics_bound)
        ape = np.abs(predicted / data.tokens_per_sec - 1.0)
        moe = moe_rows(data.frame)
        hits = self.hits.get(grouping, np.full(data.rows, np.nan))
        out = {}
        for kind, rows in (("dense", ~moe), ("moe", moe)):
            finite = rows & np.isfinite(ape)
            out[f"{kind}_median_ape"] = float(np.median(ape[finite])) if finite.any() else float("nan")
            scored = rows & np.isfinite(hits)
            out[f"{kind}_interval_coverage"] = float(hits[scored].mean()) if scored.any() else float("nan")
        return out


@dataclass(frozen=True)
class PromotionDecision:
    promote: bool
    reason: str
    champion_version: str | None = None
    champion_score: float | None = None


@dataclass
class TrainingOutcome:
    version: str
    alias: str                                     # champion or challenger
    reason: str
    best: str                                      # winning candidate name
    scores: dict[str, float]                       # candidate -> selection score
    median_ape: dict[str, dict[str, float]]        # candidate -> grouping -> pooled median APE
    coverage: dict[str, float]                     # best candidate: grouping -> cross-fold coverage
    intervals: IntervalOffsets
    champion_rescored: float | None
    rows: int
    digest: str
    run_id: str
    wall_seconds: float

    registered: bool = True                        # False: identical to `version`, nothing registered

    def summary_line(self) -> str:
        if not self.registered:
            return f"train: no new version ({self.best}): {self.reason}"
        return f"train: version {self.version} -> {self.alias} ({self.best}): {self.reason}"

    def markdown(self) -> str:
        groupings = list(next(iter(self.median_ape.values())).keys())
        title = (f"version {self.version} -> `{self.alias}`" if self.registered
                 else f"no new version (v{self.version} is identical)")
        lines = [f"## Training: {title}", "", self.reason, "",
                 "| candidate | score | " + " | ".join(f"median APE ({g} CV)" for g in groupings) + " |",
                 "|---|---:|" + "---:|" * len(groupings)]
        for name, score in sorted(self.scores.items(), key=lambda item: item[1]):
            apes = " | ".join(f"{self.median_ape[name][g]:.1%}" for g in groupings)
            lines.append(f"| {name}{' (best)' if name == self.best else ''} | {score:.4f} | {apes} |")
        cover = ", ".join(f"{g}: {c:.1%}" for g, c in self.coverage.items())
        lines += ["", f"{self.intervals.level:.0%} interval coverage on held-out folds ({cover}); "
                  f"{self.rows} training rows; {self.wall_seconds:.1f} s."]
        return "\n".join(lines)


def moe_rows(frame: pd.DataFrame) -> np.ndarray:
    """True for MoE runs (fewer active than total parameters)."""
    total = pd.to_numeric(frame["params_b"], errors="coerce").to_numpy(dtype="float64")
    active = pd.to_numeric(frame["active_params_b"], errors="coerce").to_numpy(dtype="float64")
    values: np.ndarray = np.isfinite(total) & np.isfinite(active) & (active < total * 0.999)
    return values


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


def _neg_mae_where_defined(estimator: Any, X: pd.DataFrame, y: np.ndarray) -> float:
    """Permutation-importance score: minus the mean absolute log-MFU error over rows with a prediction (a
    shuffled column can pair a GPU with a precision it has no peak for, e.g. an A100 with fp8: no prediction)."""
    predicted = np.asarray(estimator.predict(X), dtype="float64")
    defined = np.isfinite(predicted)
    return -float(np.mean(np.abs(predicted[defined] - np.asarray(y)[defined]))) if defined.any() else float("-inf")


def extrapolation_flagger(icfg: Mapping[str, Any]) -> Flagger:
    """Flags of held-out rows relative to a fold's training rows, exactly as `gpucost predict` flags new rows
    relative to all training rows (TrainingCoverage.flags)."""
    min_moe_rows = int(icfg["min_moe_rows"])

    def flag(train: pd.DataFrame, test: pd.DataFrame) -> list[str]:
        seen = test["gpu"].isin(set(train["gpu"].dropna().astype(str))).to_numpy()
        return TrainingCoverage.of_training(train, min_moe_rows).flags(test, seen)

    return flag


def configuration_groups(frame: pd.DataFrame) -> np.ndarray:
    """A configuration = a model size of a source: held out together, its rows are new setups of seen sources
    (mostly inside the training data: the residuals that calibrate rows without extrapolation flags)."""
    return (frame["source_group"].fillna("unknown").astype(str) + "|"
            + frame["params_b"].round(1).astype(str)).to_numpy()


def calibration_settings(icfg: Mapping[str, Any]) -> CalibrationSettings:
    return {"min_flag_rows": int(icfg["min_flag_rows"]),
            "default_widening": float(icfg["widen_factor"]),
            "residual_floor": float(icfg["residual_floor"])}


def evaluate_candidate(spec: CandidateSpec, data: TrainingData, folds: Mapping[str, list[Fold]],
                       target: TargetSpec, config: Mapping[str, Any], with_importance: bool = True,
                       with_intervals: bool = True) -> CandidateEvaluation:
    """Grouped CV under every grouping, normalised-conformal intervals calibrated on every held-out residual
    with their honest cross-fold coverage, and (optionally) a full-data fit with permutation importance."""
    icfg = config["intervals"]
    flagger = extrapolation_flagger(icfg) if with_intervals else None
    cv = {grouping: cross_validate(spec, data, grouping, grouping_folds, target, flagger)
          for grouping, grouping_folds in folds.items()}
    evaluation = CandidateEvaluation(spec=spec, cv=cv, score=selection_score(cv, config["selection"]["metric"]))
    if with_intervals:
        level = float(icfg["level"])
        known = cross_validate(spec, data, "configuration",
                               grouped_folds(configuration_groups(data.frame), int(icfg["known_folds"])),
                               target, flagger)
        rows = np.arange(data.rows)
        pool = CalibrationPool.concat([(r.residuals(data), rows, r.row_flags) for r in (*cv.values(), known)],
                                      models_of_rows=model_keys(data.frame))
        settings = calibration_settings(icfg)
        for grouping, result in cv.items():
            evaluation.hits[grouping] = normalised_fold_hits(
                pool, result.residuals(data), result.row_flags, result.fold_of_row, level, **settings)
            evaluation.coverage[grouping], evaluation.fold_coverage[grouping] = normalised_fold_coverage(
                pool, result.residuals(data), result.row_flags, result.fold_of_row, level, **settings)
        evaluation.conformal = NormalisedConformal.calibrate(pool.residuals, pool.flags, level, models=pool.models,
                                                             **settings)
    if with_importance:
        evaluation.fitted = build_pipeline(spec).fit(data.frame, data.log_mfu)
        columns = list(spec.uses_features.input_columns)
        # only the input columns are shuffled; the rest of each row goes back in unshuffled (the structured
        # model reads the physics bound to turn its step time into MFU: without it every prediction was NaN,
        # every importance NaN, and numpy warned on the command line)
        context = data.frame.drop(columns=columns)

        def score(estimator: Any, X: pd.DataFrame, y: np.ndarray) -> float:
            return _neg_mae_where_defined(estimator, pd.concat([X, context.loc[X.index]], axis=1), y)

        result = permutation_importance(
            evaluation.fitted, data.frame[columns], data.log_mfu, scoring=score,
            n_repeats=int(config["importance"]["n_repeats"]), random_state=spec.seed,
        )
        # mean increase of the log-MFU absolute error when the column is shuffled (0 = unused)
        evaluation.importance = {c: float(m) for c, m in zip(columns, result.importances_mean, strict=True)}
    return evaluation


def residual_figure(evaluation: CandidateEvaluation, data: TrainingData) -> Figure:
    """Per grouping: out-of-fold predicted vs measured tokens/s/GPU (log-log), coloured by held-out group."""
    # "tight" is one layout pass at save time; "constrained" solves a layout per draw and was most of the cost
    figure = Figure(figsize=(6 * len(evaluation.cv), 5), layout="tight")
    axes = figure.subplots(1, len(evaluation.cv), squeeze=False)[0]
    for ax, (grouping, result) in zip(axes, evaluation.cv.items(), strict=True):
        predicted = tokens_per_sec(result.oof_log_mfu, data.physics_bound)
        for fold in result.folds:
            ax.scatter(data.tokens_per_sec[fold.test], predicted[fold.test], s=12, alpha=0.7, label=fold.held_out)
        low, high = float(np.min(data.tokens_per_sec)) * 0.5, float(np.max(data.tokens_per_sec)) * 2
        ax.plot([low, high], [low, high], color="black", linewidth=1)
        ax.set(xscale="log", yscale="log", xlabel="measured tokens/s per GPU", ylabel="predicted (out of fold)",
               title=f"{evaluation.spec.name}: leave one {grouping} out, "
                     f"median APE {result.pooled['median_ape']:.1%}")
        ax.legend(fontsize=7, loc="upper left")
    return figure


def _flat_params(spec: CandidateSpec) -> dict[str, Any]:
    params: dict[str, Any] = {"kind": spec.kind, "seed": spec.seed}
    params.update({f"model.{k}": v for k, v in spec.params.items()})
    return params


def _dataset(data: TrainingData) -> Any:
    with warnings.catch_warnings():
        # MLflow hints that integer columns cannot hold missing values: this schema only describes the data
        warnings.simplefilter("ignore", UserWarning)
        return from_pandas(data.frame, source="features.training_runs", targets=TARGET,
                           name="features.training_runs", digest=data.digest[:32])


def log_candidate_run(evaluation: CandidateEvaluation, data: TrainingData, dataset: Any = None,
                      plot_dpi: int = 100) -> None:
    """Everything about one candidate, in the active MLflow run."""
    spec = evaluation.spec
    mlflow.log_params(_flat_params(spec))
    mlflow.log_input(dataset if dataset is not None else _dataset(data), context="training")
    mlflow.set_tags({TAG_SPEC: spec.to_json(), TAG_DIGEST: data.digest, "candidate": spec.name})
    mlflow.log_dict(spec.to_dict(), "candidate_spec.json")
    mlflow.log_dict({"input_columns": list(spec.uses_features.input_columns),
                     **spec.uses_features.to_dict()}, "features.json")
    # every metric in one batch (one store transaction instead of one per call)
    now = int(time.time() * 1000)
    batch: list[Metric] = []

    def add(values: Mapping[str, float], step: int = 0) -> None:
        batch.extend(Metric(k, float(v), now, step) for k, v in values.items() if np.isfinite(v))

    for grouping, result in evaluation.cv.items():
        for fold, metrics in zip(result.folds, result.fold_metrics, strict=True):
            add({f"cv_{grouping}/fold_{name}": value for name, value in metrics.items()}, step=fold.index)
        add({f"cv_{grouping}/{name}": result.pooled[name] for name in METRICS})
        if grouping in evaluation.coverage:
            add({f"cv_{grouping}/interval_coverage": evaluation.coverage[grouping]})
        # dense and MoE runs apart: their held-out median APE and interval coverage
        add({f"cv_{grouping}/{name}": value for name, value in evaluation.by_kind(grouping, data).items()})
        for fold_index, covered in evaluation.fold_coverage.get(grouping, {}).items():
            add({f"cv_{grouping}/fold_interval_coverage": covered}, step=fold_index)
        # log_dict writes any JSON value, a list too; its annotation says dict
        mlflow.log_dict([{"fold": f.index, "held_out": f.held_out, "test_rows": len(f.test), **m}  # type: ignore[arg-type]
                         for f, m in zip(result.folds, result.fold_metrics, strict=True)], f"cv_{grouping}_folds.json")
    add({"score": evaluation.score})
    if evaluation.importance:
        add({f"importance/{c}": v for c, v in evaluation.importance.items()})
        mlflow.log_dict(dict(sorted(evaluation.importance.items(), key=lambda kv: -kv[1])),
                        "permutation_importance.json")
    run = mlflow.active_run()
    assert run is not None
    # log_batch takes at most 1000 metrics per call
    for start in range(0, len(batch), 1000):
        mlflow.MlflowClient().log_batch(run.info.run_id, metrics=batch[start:start + 1000])
    figure = residual_figure(evaluation, data)
    mlflow.log_figure(figure, "residuals.png", save_kwargs={"dpi": int(plot_dpi)})
    figure.clear()


def rescore_champion(tracking: Tracking, best: CandidateEvaluation, data: TrainingData,
                     folds: Mapping[str, list[Fold]], target: TargetSpec, config: Mapping[str, Any]
                     ) -> tuple[Any, float | None, str | None]:
    """(champion version, its score on THIS data and THESE splits, why it could not be re-scored)."""
    champion = version_by_alias(tracking.client, CHAMPION)
    if champion is None:
        return None, None, None
    text = champion.tags.get(TAG_SPEC)
    if not text:
        return champion, None, f"champion v{champion.version} has no `{TAG_SPEC}` tag to re-score"
    try:
        spec = CandidateSpec.from_json(text)
        if spec == best.spec:  # same spec, same data, same splits, same seeds: same score
            return champion, best.score, None
        return champion, evaluate_candidate(spec, data, folds, target, config, with_importance=False,
                                            with_intervals=False).score, None
    except (ValueError, KeyError, TypeError) as error:
        return champion, None, f"champion v{champion.version} cannot be re-scored: {error}"


def decide_promotion(best: CandidateEvaluation, champion: Any, champion_score: float | None,
                     rescore_error: str | None, data: TrainingData, config: Mapping[str, Any],
                     fingerprint: str | None = None) -> PromotionDecision:
    if champion is None:
        return PromotionDecision(True, "no champion yet: the first registered version becomes champion")
    version = str(champion.version)
    if champion_score is None:
        return PromotionDecision(True, f"{rescore_error}; promoting the new version", version)
    rule = config["promotion"]
    needed = champion_score * (1.0 - float(rule["min_relative_improvement"]))
    figures = (f"new {best.spec.name} scores {best.score:.4f}; champion v{version} re-scored on the same "
               f"{data.rows} rows and splits scores {champion_score:.4f} (must be <= {needed:.4f})")
    if best.score <= needed:
        return PromotionDecision(True, f"promoted: {figures}", version, champion_score)
    same_spec = champion.tags.get(TAG_SPEC) == best.spec.to_json()
    if same_spec and rule["promote_refit_on_new_data"] and champion.tags.get(TAG_DIGEST) != data.digest:
        return PromotionDecision(True, f"promoted as a refit of the champion's own spec on new training data "
                                       f"({figures})", version, champion_score)
    # same spec, same rows, yet not the champion's fingerprint: the reference files or vocabulary the model carries
    # (e.g. a GPU added to gpu_specs.csv, which no training row changes) or its settings changed; the champion
    # would keep predicting with the old ones
    if (same_spec and rule["promote_refit_on_new_data"] and fingerprint is not None
            and champion.tags.get(TAG_FINGERPRINT) != fingerprint):
        return PromotionDecision(True, f"promoted as a refit of the champion's own spec with changed reference "
                                       f"data or settings ({figures})", version, champion_score)
    return PromotionDecision(False, f"kept champion v{version}: {figures}", version, champion_score)


def fit_model(best: CandidateEvaluation, data: TrainingData, target: TargetSpec,
              config: Mapping[str, Any]) -> TokenEfficiencyModel:
    """The registered model: the winner fitted on every row, with its normalised-conformal intervals."""
    icfg = config["intervals"]
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
    coverage = TrainingCoverage.of_training(data.frame, int(icfg["min_moe_rows"]),
                                            float(icfg["widen_factor"]))
    return TokenEfficiencyModel(pipeline=pipeline, spec=best.spec, target=target, intervals=intervals, seen_gpus=seen,
                                coverage=coverage, conformal=conformal)


def pip_requirements() -> list[str]:
    """Explicit (inferring them costs seconds per model). The project code itself travels as code_paths; the
    feature engineering runs DuckDB SQL over polars frames (pyarrow between them)."""
    return [f"mlflow=={mlflow.__version__}", f"scikit-learn=={sklearn.__version__}", f"pandas=={pd.__version__}",
            f"numpy=={np.__version__}", f"polars=={pl.__version__}", f"cloudpickle=={cloudpickle.__version__}",
            f"duckdb=={duckdb.__version__}", f"pyarrow=={pyarrow.__version__}"]


# The project code the pyfunc runs (its feature SQL included), logged with every version as its code_paths:
# a fresh process loading the model from the registry imports this copy.
CODE_PATHS = (PROJECT_ROOT / "tasks", PROJECT_ROOT / "sql")
# An input example: contract columns of two training rows (what a caller passes; throughput left out).
EXAMPLE_COLUMNS = ("run_id", "gpu", "num_gpus", "params_b", "seq_len", "precision", "workload", "micro_batch",
                   "global_batch_tokens", "activation_checkpointing", "framework")


def input_example(data: TrainingData) -> pd.DataFrame:
    return data.frame.loc[:, list(EXAMPLE_COLUMNS)].head(2).reset_index(drop=True)


def training_fingerprint(data: TrainingData, spec: CandidateSpec, config: Mapping[str, Any],
                         features: ContractFeatures) -> str:
    """sha256 of what a registered version is made of: the training rows as loaded (their digest), the winning
    spec with its hyperparameters and seed, the settings that shape its fit and intervals (target clip, interval
    calibration, CV splits, seed), and the feature engineering it carries (vocabulary, reference files' bytes).
    The same fingerprint twice means the same model: nothing new to register."""
    parts = {"data": data.digest, "spec": spec.to_dict(), "seed": config["seed"], "target": config["target"],
             "intervals": config["intervals"], "cv": config["cv"], "vocabulary": features.vocabulary,
             "reference": files_digest(features.files)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def version_with_fingerprint(tracking: Tracking, fingerprint: str) -> Any:
    """The newest registered version tagged with `fingerprint` (None when there is none)."""
    try:
        versions = tracking.client.search_model_versions(f"name = '{REGISTERED_MODEL}'")
    except MlflowException:
        return None
    same = [v for v in versions if (v.tags or {}).get(TAG_FINGERPRINT) == fingerprint]
    return max(same, key=lambda v: int(v.version)) if same else None


@contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    """`name` = `value` in the environment for the block (MLflow reads some settings only from there)."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def log_version(model: TokenEfficiencyModel, features: ContractFeatures, example: pd.DataFrame) -> str:
    """Log the pyfunc model (its reference files as artifacts, the project code as code_paths, the contract
    signature and an input example) in the active run and register it (the slow part: files are copied)."""
    with (warnings.catch_warnings(), _environment(MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR.name, "false"),
          contextlib.redirect_stderr(io.StringIO())):
        # MLflow's type-hint advice and its integer-column hint about the example: the signature is the schema;
        # copying each reference file into the model would draw a progress bar on stderr, terminal or not;
        # "Successfully registered model ..." / "Created version ..." are printed to stderr (the training
        # summary names the version): errors still raise
        warnings.simplefilter("ignore", UserWarning)
        info = mlflow.pyfunc.log_model(
            name="model", python_model=TokenEfficiencyPyfunc(model, features), artifacts=dict(features.files),
            code_paths=[str(p) for p in CODE_PATHS], signature=contract_signature(), input_example=example,
            pip_requirements=pip_requirements(), registered_model_name=REGISTERED_MODEL,
        )
    return str(info.registered_model_version)


def alias_and_tag(tracking: Tracking, version: str, model: TokenEfficiencyModel, best: CandidateEvaluation,
                  data: TrainingData, decision: PromotionDecision, fingerprint: str) -> None:
    """Alias the new version (first: the moment it was decided against the current champion) and tag it."""
    client = tracking.client
    client.set_registered_model_alias(REGISTERED_MODEL, CHAMPION if decision.promote else CHALLENGER, version)
    tags = {TAG_SPEC: best.spec.to_json(), TAG_DIGEST: data.digest, "training_rows": str(data.rows),
            "candidate": best.spec.name, "score": f"{best.score:.6f}",
            "intervals": json.dumps(model.intervals.to_dict()), "seen_gpus": ",".join(model.seen_gpus),
            # the MoE models' regimes trained on (model|precision family|EP placement): what "moe_seen_model" means
            "moe_model_regimes": ",".join(model.coverage.regimes if model.coverage is not None else ()),
            TAG_DECISION: CHAMPION if decision.promote else CHALLENGER, TAG_REASON: decision.reason,
            TAG_FINGERPRINT: fingerprint}
    if decision.promote:
        tags[TAG_WAS_CHAMPION] = "true"  # load_champion falls back to former champions first
    for key, value in tags.items():
        client.set_model_version_tag(REGISTERED_MODEL, version, key, value)
    client.update_model_version(REGISTERED_MODEL, version, description=f"{best.spec.name}: {decision.reason}")


def settle_concurrent_promotion(tracking: Tracking, version: str, decision: PromotionDecision) -> PromotionDecision:
    """After promoting `version`: if `champion` already points elsewhere, a training sharing the registry set it
    after us (last writer wins), so this version is a challenger: say so in its tags and aliases."""
    if not decision.promote:
        return decision
    holder = version_by_alias(tracking.client, CHAMPION)
    if holder is None or str(holder.version) == version:
        return decision
    reason = f"{decision.reason}; then superseded by v{holder.version}, promoted by a concurrent training"
    client = tracking.client
    client.set_model_version_tag(REGISTERED_MODEL, version, TAG_DECISION, CHALLENGER)
    client.set_model_version_tag(REGISTERED_MODEL, version, TAG_REASON, reason)
    client.set_registered_model_alias(REGISTERED_MODEL, CHALLENGER, version)
    return PromotionDecision(False, reason, str(holder.version), decision.champion_score)


def process_tags() -> dict[str, str]:
    return {TAG_HOST: socket.gethostname(), TAG_PID: str(os.getpid())}


def training_alive(tags: Mapping[str, str], start_time_ms: int | None, now_ms: int | None = None) -> bool:
    """Is the process that opened a RUNNING run (tags from `process_tags`) still there? On this machine: its pid
    is alive. On another machine (a shared tracking server): yes until OTHER_HOST_STALE_AFTER_MS. Runs from
    before these tags existed: no (the older rule: RUNNING and older than this process means interrupted)."""
    host, pid = tags.get(TAG_HOST), tags.get(TAG_PID)
    if host is None or pid is None or not pid.isdigit():
        return False
    if host != socket.gethostname():
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        return start_time_ms is None or now_ms - start_time_ms < OTHER_HOST_STALE_AFTER_MS
    return pid_alive(int(pid))


def recover_interrupted_training(tracking: Tracking, started_before_ms: int | None = None) -> list[str]:
    """Clean up after a training that was killed: its MLflow runs still say RUNNING and the version it may have
    registered has no alias and no decision. Mark those runs FAILED (tag `failure_reason`) and tag those
    versions `status_note`, so the UI tells the truth. Only runs started before `started_before_ms` (default:
    this process's start) are touched. Returns one line per thing fixed."""
    cutoff = PROCESS_STARTED_MS if started_before_ms is None else started_before_ms
    client = tracking.client
    notes: list[str] = []
    live: set[str] = set()  # runs a training process is still working on (here or on another machine)
    if tracking.experiment_id:
        stale = client.search_runs([tracking.experiment_id], filter_string="attributes.status = 'RUNNING'",
                                   max_results=1000)
        for run in stale:
            if run.info.start_time is not None and run.info.start_time >= cutoff:
                continue
            if training_alive(run.data.tags, run.info.start_time):
                live.add(run.info.run_id)
                continue
            client.set_tag(run.info.run_id, "failure_reason", INTERRUPTED_RUN_NOTE)
            client.set_terminated(run.info.run_id, status="FAILED")
            notes.append(f"run {run.info.run_id} ({run.info.run_name}) was left RUNNING: marked FAILED")
    try:
        versions: Sequence[ModelVersion] = client.search_model_versions(f"name = '{REGISTERED_MODEL}'")
    except MlflowException:
        versions = []
    for version in versions:
        tags = version.tags or {}
        if version.aliases or TAG_DECISION in tags or TAG_STATUS_NOTE in tags:
            continue  # finished trainings tag every version they register with their decision
        if version.creation_timestamp is not None and version.creation_timestamp >= cutoff:
            continue
        if version.run_id in live:
            continue  # registered a moment ago by a training that is about to tag it
        client.set_model_version_tag(REGISTERED_MODEL, version.version, TAG_STATUS_NOTE, INTERRUPTED_VERSION_NOTE)
        notes.append(f"version {version.version} was registered by an interrupted training: tagged `{TAG_STATUS_NOTE}`")
    for note in notes:
        log.warning("%s", note)
    return notes


def train_and_register(features: pl.DataFrame, config: Models | Mapping[str, Any], resources: Resources,
                       contract: ContractFeatures) -> TrainingOutcome:
    """The whole training step on a feature table (rows of features.training_runs): `config` is config/models.toml,
    the store `resources.tracking_uri`, and `contract` how contract rows become features (it travels with the model)."""
    started = time.perf_counter()
    # plain tables (tests, scripts) are completed by the typed model: its defaults are the only ones
    config = (config if isinstance(config, Models) else Models.model_validate(config)).model_dump()
    data = prepare_training_data(features)
    if data.rows < MIN_TRAINING_ROWS:
        raise NotEnoughTelemetryError(f"{data.rows} usable training rows in features.training_runs "
                                      f"(need {MIN_TRAINING_ROWS}); ingest telemetry first")
    target = TargetSpec.from_config(config["target"])
    try:
        folds = cv_folds(data, config["cv"]["groupings"], int(config["cv"]["max_folds"]))
    except ValueError as error:
        raise NotEnoughTelemetryError(str(error)) from error
    specs = candidate_specs(config)
    tracking = connect_tracking(resources.tracking_uri, resources.home)
    recover_interrupted_training(tracking)
    compute = config["compute"]
    # OpenMP threads per model: on a few hundred rows, thread start-up costs more than the work it splits;
    # results are identical
    with threadpool_limits(limits=int(compute["openmp_threads"]), user_api="openmp"):
        return _train_and_register(data, config, target, folds, specs, tracking,
                                   plot_dpi=int(compute["residual_plot_dpi"]), started=started,
                                   features=contract)


def _unchanged(tracking: Tracking, same: Any, fingerprint: str, best: CandidateEvaluation,
               evaluations: list[CandidateEvaluation], model: TokenEfficiencyModel, data: TrainingData,
               folds: Mapping[str, list[Fold]], run_id: str, started: float) -> TrainingOutcome:
    """The active run registers nothing: version `same` was made of exactly this (same fingerprint)."""
    # (a version found by search carries no aliases: ask for each)
    holders = {a: version_by_alias(tracking.client, a) for a in (CHAMPION, CHALLENGER)}
    alias = next((a for a, v in holders.items() if v is not None and str(v.version) == str(same.version)), "none")
    reason = (f"identical to v{same.version} ({alias}): same training rows (data digest {data.digest[:12]}), "
              f"same best spec {best.spec.name} and settings (training fingerprint {fingerprint[:12]})")
    mlflow.set_tags({"best_candidate": best.spec.name, "registered_version": "none", TAG_DECISION: UNCHANGED,
                     TAG_REASON: reason, TAG_NOT_REGISTERED: reason, "identical_to_version": str(same.version)})
    wall = time.perf_counter() - started
    mlflow.log_metrics({"best_score": best.score, "wall_seconds": wall})
    log.info("no new version: %s", reason)
    return TrainingOutcome(
        version=str(same.version), alias=alias, reason=reason, best=best.spec.name,
        scores={e.spec.name: e.score for e in evaluations},
        median_ape={e.spec.name: {g: e.median_ape(g) for g in folds} for e in evaluations},
        coverage=best.coverage, intervals=model.intervals, champion_rescored=None, rows=data.rows,
        digest=data.digest, run_id=run_id, wall_seconds=wall, registered=False)


def _train_and_register(data: TrainingData, config: Mapping[str, Any], target: TargetSpec,
                        folds: Mapping[str, list[Fold]], specs: list[CandidateSpec], tracking: Tracking,
                        plot_dpi: int, started: float, features: ContractFeatures) -> TrainingOutcome:
    run_name = f"train-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    with mlflow.start_run(experiment_id=tracking.experiment_id, run_name=run_name, tags=process_tags()) as parent:
        mlflow.log_params({"candidates": ",".join(s.name for s in specs), "training_rows": data.rows,
                           "dropped_rows": data.dropped_rows, "cv_groupings": ",".join(folds),
                           "interval_level": config["intervals"]["level"], "seed": config["seed"],
                           "min_relative_improvement": config["promotion"]["min_relative_improvement"]})
        dataset = _dataset(data)
        mlflow.log_input(dataset, context="training")
        mlflow.set_tag(TAG_DIGEST, data.digest)
        evaluations = []
        for number, spec in enumerate(specs, start=1):
            progress.step("train: candidate %d of %d: %s (%d rows)", number, len(specs), spec.name, data.rows)
            evaluation = evaluate_candidate(spec, data, folds, target, config)
            with mlflow.start_run(experiment_id=tracking.experiment_id, run_name=spec.name, nested=True,
                                  tags=process_tags()):
                log_candidate_run(evaluation, data, dataset, plot_dpi)
            evaluations.append(evaluation)
            log.info("%s: score %.4f (%s)", spec.name, evaluation.score,
                     ", ".join(f"{g} median APE {evaluation.median_ape(g):.1%}" for g in folds))
        baseline_name = next(e.spec.name for e in evaluations if e.spec.kind == BASELINE_KIND)
        winner, losses = select_best([(e.spec.name, e.cv, e.score) for e in evaluations], baseline_name,
                                     config["selection"]["metric"])
        for name, groupings in losses.items():
            log.info("%s is not eligible: worse than the constant-MFU baseline on %s", name, ", ".join(groupings))
        best = next(e for e in evaluations if e.spec.name == winner)
        fingerprint = training_fingerprint(data, best.spec, config, features)
        mlflow.set_tag(TAG_FINGERPRINT, fingerprint)
        model = fit_model(best, data, target, config)
        same = version_with_fingerprint(tracking, fingerprint)
        if same is not None:
            return _unchanged(tracking, same, fingerprint, best, evaluations, model, data, folds,
                              parent.info.run_id, started)
        champion, champion_score, rescore_error = rescore_champion(tracking, best, data, folds, target, config)
        decision = decide_promotion(best, champion, champion_score, rescore_error, data, config, fingerprint)
        version = log_version(model, features, input_example(data))
        # another training sharing the registry may have promoted a version meanwhile: decide against that one,
        # right before aliasing (what is left of the race is settled just after)
        for _ in range(3):
            current = version_by_alias(tracking.client, CHAMPION)
            if (current.version if current else None) == (champion.version if champion else None):
                break
            champion, champion_score, rescore_error = rescore_champion(tracking, best, data, folds, target, config)
            decision = decide_promotion(best, champion, champion_score, rescore_error, data, config, fingerprint)
        alias_and_tag(tracking, version, model, best, data, decision, fingerprint)
        decision = settle_concurrent_promotion(tracking, version, decision)
        alias = CHAMPION if decision.promote else CHALLENGER
        baseline = next(e for e in evaluations if e.spec.kind == BASELINE_KIND)
        mlflow.set_tags({"best_candidate": best.spec.name, "registered_version": version, TAG_DECISION: alias,
                         TAG_REASON: decision.reason,
                         "not_eligible": "; ".join(f"{n}: worse than baseline on {', '.join(g)}"
                                                   for n, g in losses.items()) or "none"})
        structured: Any = getattr(best.fitted[-1], "structured_", best.fitted[-1]) if best.fitted is not None else None
        if hasattr(structured, "learned"):
            mlflow.log_metrics({"learned/" + k.replace("[", ".").replace("]", ""): v
                                for k, (v, _unit) in structured.learned().items()})
            mlflow.log_dict({k: {"value": v, "unit": u} for k, (v, u) in structured.learned().items()},
                            "learned_parameters.json")
        mlflow.log_metrics({"best_score": best.score, "baseline_score": baseline.score,
                            **{f"interval_coverage/{g}": c for g, c in best.coverage.items()},
                            **{f"interval/{k}": v for k, v in model.intervals.to_dict().items()},
                            **{"conformal/" + k.replace("[", ".").replace("]", ""): v
                               for k, v in (model.conformal.to_dict() if model.conformal else {}).items()}})
        if champion_score is not None:
            mlflow.log_metric("champion_rescored_score", champion_score)
        log.info("version %s -> %s: %s", version, alias, decision.reason)
        wall = time.perf_counter() - started
        mlflow.log_metric("wall_seconds", wall)
    return TrainingOutcome(
        version=version, alias=alias, reason=decision.reason, best=best.spec.name,
        scores={e.spec.name: e.score for e in evaluations},
        median_ape={e.spec.name: {g: e.median_ape(g) for g in folds} for e in evaluations},
        coverage=best.coverage, intervals=model.intervals, champion_rescored=champion_score, rows=data.rows,
        digest=data.digest, run_id=parent.info.run_id, wall_seconds=wall,
    )


