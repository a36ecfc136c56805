"""Every MLflow read and write of a training: its runs (the parent and one per candidate), the training fingerprint,
logging and registering the pyfunc with only the code it runs, the alias and tags of a new version, the promotion
policy (a challenger beats the champion re-scored on the same rows and splits) and its race with a concurrent
training, and recovery from a killed training's runs and versions. The stages themselves are tasks.model.pipeline."""

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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import mlflow
import numpy as np
import pandas as pd
from mlflow.data.pandas_dataset import from_pandas
from mlflow.entities import Metric
from mlflow.entities.model_registry import ModelVersion
from mlflow.environment_variables import MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR
from mlflow.exceptions import MlflowException
from pydantic_core import to_jsonable_python

from tasks.model.candidates import CandidateSpec
from tasks.model.config import Models
from tasks.model.contract_rows import ContractFeatures, files_digest
from tasks.model.design import TARGET
from tasks.model.evaluation import METRICS, Fold, TrainingData
from tasks.model.model_code import model_code_folder, pip_requirements
from tasks.model.pipeline import CandidateEvaluation, Prepared, Selection, evaluate_candidate
from tasks.model.report import residual_figure
from tasks.model.serving import TokenEfficiencyModel, TokenEfficiencyPyfunc, contract_signature
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
    version_by_alias,
)
from tasks.processes import pid_alive

log = logging.getLogger("gpucost.train")

# Runs this process starts are newer than this; a RUNNING run older than it was left by a killed training.
PROCESS_STARTED_MS = int(time.time() * 1000)
INTERRUPTED_RUN_NOTE = "interrupted: the training process ended before this run finished (found by a later training)"
INTERRUPTED_VERSION_NOTE = "registered by an interrupted training; never promoted"
# Every training run says which process runs it, so that a training sharing a tracking server with others can
# tell a killed training's RUNNING run from one that another team member's process is still working on.
TAG_HOST, TAG_PID = "gpucost.host", "gpucost.pid"
# A RUNNING run of another machine is only taken for interrupted after this long (no training takes hours here).
OTHER_HOST_STALE_AFTER_MS = 24 * 3600 * 1000
# An input example: contract columns of two training rows (what a caller passes; throughput left out).
EXAMPLE_COLUMNS = ("run_id", "gpu", "num_gpus", "params_b", "seq_len", "precision", "workload", "micro_batch",
                   "global_batch_tokens", "activation_checkpointing", "framework")


@dataclass(frozen=True)
class PromotionDecision:
    promote: bool
    reason: str
    champion_version: str | None = None
    champion_score: float | None = None


# --- runs -------------------------------------------------------------------------------------------------------


def process_tags() -> dict[str, str]:
    return {TAG_HOST: socket.gethostname(), TAG_PID: str(os.getpid())}


@contextmanager
def training_run(tracking: Tracking, prepared: Prepared, config: Models) -> Iterator[tuple[str, Any]]:
    """The parent run of a training, with its parameters and its training data logged: (run id, the dataset)."""
    data, folds = prepared.data, prepared.folds
    run_name = f"train-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    with mlflow.start_run(experiment_id=tracking.experiment_id, run_name=run_name, tags=process_tags()) as parent:
        mlflow.log_params({"candidates": ",".join(s.name for s in prepared.specs), "training_rows": data.rows,
                           "dropped_rows": data.dropped_rows, "cv_groupings": ",".join(folds),
                           "interval_level": config.intervals.level, "seed": config.seed,
                           "min_relative_improvement": config.promotion.min_relative_improvement})
        dataset = _dataset(data)
        mlflow.log_input(dataset, context="training")
        mlflow.set_tag(TAG_DIGEST, data.digest)
        yield parent.info.run_id, dataset


def candidate_run(tracking: Tracking, evaluation: CandidateEvaluation, data: TrainingData, dataset: Any,
                  plot_dpi: int) -> None:
    """One nested run per evaluated candidate."""
    with mlflow.start_run(experiment_id=tracking.experiment_id, run_name=evaluation.spec.name, nested=True,
                          tags=process_tags()):
        log_candidate_run(evaluation, data, dataset, plot_dpi)


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


def _candidate_metrics(evaluation: CandidateEvaluation, data: TrainingData) -> list[Metric]:
    """Every metric of a candidate: per fold and pooled, per grouping, dense and MoE apart, importance."""
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
    add({"score": evaluation.score})
    if evaluation.importance:
        add({f"importance/{c}": v for c, v in evaluation.importance.items()})
    return batch


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
    for grouping, result in evaluation.cv.items():
        # log_dict writes any JSON value, a list too; its annotation says dict
        mlflow.log_dict([{"fold": f.index, "held_out": f.held_out, "test_rows": len(f.test), **m}  # type: ignore[arg-type]
                         for f, m in zip(result.folds, result.fold_metrics, strict=True)], f"cv_{grouping}_folds.json")
    if evaluation.importance:
        mlflow.log_dict(dict(sorted(evaluation.importance.items(), key=lambda kv: -kv[1])),
                        "permutation_importance.json")
    run = mlflow.active_run()
    assert run is not None
    # every metric in one batch (one store transaction instead of one per call); log_batch takes at most 1000
    batch = _candidate_metrics(evaluation, data)
    for start in range(0, len(batch), 1000):
        mlflow.MlflowClient().log_batch(run.info.run_id, metrics=batch[start:start + 1000])
    figure = residual_figure(evaluation, data)
    mlflow.log_figure(figure, "residuals.png", save_kwargs={"dpi": int(plot_dpi)})
    figure.clear()


def log_registered(selection: Selection, model: TokenEfficiencyModel, version: str, decision: PromotionDecision
                   ) -> None:
    """The parent run's summary of a training that registered `version`: what won, why, what it learned."""
    best, alias = selection.best, CHAMPION if decision.promote else CHALLENGER
    mlflow.set_tags({"best_candidate": best.spec.name, "registered_version": version, TAG_DECISION: alias,
                     TAG_REASON: decision.reason,
                     "not_eligible": "; ".join(f"{n}: worse than baseline on {', '.join(g)}"
                                               for n, g in selection.losses.items()) or "none"})
    structured: Any = getattr(best.fitted[-1], "structured_", best.fitted[-1]) if best.fitted is not None else None
    if hasattr(structured, "learned"):
        mlflow.log_metrics({"learned/" + k.replace("[", ".").replace("]", ""): v
                            for k, (v, _unit) in structured.learned().items()})
        mlflow.log_dict({k: {"value": v, "unit": u} for k, (v, u) in structured.learned().items()},
                        "learned_parameters.json")
    mlflow.log_metrics({"best_score": best.score, "baseline_score": selection.baseline.score,
                        **{f"interval_coverage/{g}": c for g, c in best.coverage.items()},
                        **{f"interval/{k}": v for k, v in model.intervals.to_dict().items()},
                        **{"conformal/" + k.replace("[", ".").replace("]", ""): v
                           for k, v in (model.conformal.to_dict() if model.conformal else {}).items()}})
    if decision.champion_score is not None:
        mlflow.log_metric("champion_rescored_score", decision.champion_score)


def log_unchanged(tracking: Tracking, same: Any, fingerprint: str, best: CandidateEvaluation, data: TrainingData
                  ) -> tuple[str, str]:
    """The active run registers nothing: version `same` was made of exactly this (same fingerprint). Returns
    (the alias `same` holds or "none", why nothing was registered)."""
    # (a version found by search carries no aliases: ask for each)
    holders = {a: version_by_alias(tracking.client, a) for a in (CHAMPION, CHALLENGER)}
    alias = next((a for a, v in holders.items() if v is not None and str(v.version) == str(same.version)), "none")
    reason = (f"identical to v{same.version} ({alias}): same training rows (data digest {data.digest[:12]}), "
              f"same best spec {best.spec.name} and settings (training fingerprint {fingerprint[:12]})")
    mlflow.set_tags({"best_candidate": best.spec.name, "registered_version": "none", TAG_DECISION: UNCHANGED,
                     TAG_REASON: reason, TAG_NOT_REGISTERED: reason, "identical_to_version": str(same.version)})
    mlflow.log_metric("best_score", best.score)
    log.info("no new version: %s", reason)
    return alias, reason


def log_wall_seconds(wall: float) -> None:
    mlflow.log_metric("wall_seconds", wall)


def set_run_fingerprint(fingerprint: str) -> None:
    mlflow.set_tag(TAG_FINGERPRINT, fingerprint)


# --- fingerprints -----------------------------------------------------------------------------------------------


def training_fingerprint(data: TrainingData, spec: CandidateSpec, config: Models, features: ContractFeatures) -> str:
    """sha256 of what a registered version is made of: the training rows as loaded (their digest), the winning
    spec with its hyperparameters and seed, the settings that shape its fit and intervals (target clip, interval
    calibration, CV splits, seed), and the feature engineering it carries (vocabulary, reference files' bytes).
    The same fingerprint twice means the same model: nothing new to register."""
    settings = {name: to_jsonable_python(getattr(config, name), by_alias=False)
                for name in ("target", "intervals", "cv")}
    parts = {"data": data.digest, "spec": spec.to_dict(), "seed": config.seed, **settings,
             "vocabulary": features.vocabulary, "reference": files_digest(features.files)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def version_with_fingerprint(tracking: Tracking, fingerprint: str) -> Any:
    """The newest registered version tagged with `fingerprint` (None when there is none)."""
    try:
        versions = tracking.client.search_model_versions(f"name = '{REGISTERED_MODEL}'")
    except MlflowException:
        return None
    same = [v for v in versions if (v.tags or {}).get(TAG_FINGERPRINT) == fingerprint]
    return max(same, key=lambda v: int(v.version)) if same else None


# --- register ---------------------------------------------------------------------------------------------------


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


def input_example(data: TrainingData) -> pd.DataFrame:
    return data.frame.loc[:, list(EXAMPLE_COLUMNS)].head(2).reset_index(drop=True)


def log_version(model: TokenEfficiencyModel, features: ContractFeatures, example: pd.DataFrame) -> str:
    """Log the pyfunc model (its reference files as artifacts, the code it runs as code_paths, the contract
    signature and an input example) in the active run and register it (the slow part: files are copied)."""
    with (warnings.catch_warnings(), _environment(MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR.name, "false"),
          contextlib.redirect_stderr(io.StringIO()), model_code_folder() as code):
        # MLflow's type-hint advice and its integer-column hint about the example: the signature is the schema;
        # copying each reference file into the model would draw a progress bar on stderr, terminal or not;
        # "Successfully registered model ..." / "Created version ..." are printed to stderr (the training
        # summary names the version): errors still raise
        warnings.simplefilter("ignore", UserWarning)
        info = mlflow.pyfunc.log_model(
            name="model", python_model=TokenEfficiencyPyfunc(model, features), artifacts=dict(features.files),
            code_paths=[str(path) for path in code], signature=contract_signature(), input_example=example,
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


# --- promotion --------------------------------------------------------------------------------------------------


def rescore_champion(tracking: Tracking, best: CandidateEvaluation, data: TrainingData,
                     folds: Mapping[str, list[Fold]], prepared_target: Any, config: Models
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
        return champion, evaluate_candidate(spec, data, folds, prepared_target, config, with_importance=False,
                                            with_intervals=False).score, None
    except (ValueError, KeyError, TypeError) as error:
        return champion, None, f"champion v{champion.version} cannot be re-scored: {error}"


def decide_promotion(best: CandidateEvaluation, champion: Any, champion_score: float | None,
                     rescore_error: str | None, data: TrainingData, config: Models,
                     fingerprint: str | None = None) -> PromotionDecision:
    """The promotion policy: the new version must beat the champion re-scored on the same rows and splits by
    config.promotion.min_relative_improvement, or be a refit of the champion's own spec on new data or files."""
    if champion is None:
        return PromotionDecision(True, "no champion yet: the first registered version becomes champion")
    version = str(champion.version)
    if champion_score is None:
        return PromotionDecision(True, f"{rescore_error}; promoting the new version", version)
    rule = config.promotion
    needed = champion_score * (1.0 - float(rule.min_relative_improvement))
    figures = (f"new {best.spec.name} scores {best.score:.4f}; champion v{version} re-scored on the same "
               f"{data.rows} rows and splits scores {champion_score:.4f} (must be <= {needed:.4f})")
    if best.score <= needed:
        return PromotionDecision(True, f"promoted: {figures}", version, champion_score)
    same_spec = champion.tags.get(TAG_SPEC) == best.spec.to_json()
    if same_spec and rule.promote_refit_on_new_data and champion.tags.get(TAG_DIGEST) != data.digest:
        return PromotionDecision(True, f"promoted as a refit of the champion's own spec on new training data "
                                       f"({figures})", version, champion_score)
    # same spec, same rows, yet not the champion's fingerprint: the reference files or vocabulary the model carries
    # (e.g. a GPU added to gpu_specs.csv, which no training row changes) or its settings changed; the champion
    # would keep predicting with the old ones
    if (same_spec and rule.promote_refit_on_new_data and fingerprint is not None
            and champion.tags.get(TAG_FINGERPRINT) != fingerprint):
        return PromotionDecision(True, f"promoted as a refit of the champion's own spec with changed reference "
                                       f"data or settings ({figures})", version, champion_score)
    return PromotionDecision(False, f"kept champion v{version}: {figures}", version, champion_score)


def decide_against_champion(tracking: Tracking, best: CandidateEvaluation, prepared: Prepared, config: Models,
                            fingerprint: str) -> tuple[Any, PromotionDecision]:
    """(the champion decided against, the decision): re-score the current champion and apply the policy."""
    champion, score, error = rescore_champion(tracking, best, prepared.data, prepared.folds, prepared.target, config)
    return champion, decide_promotion(best, champion, score, error, prepared.data, config, fingerprint)


def register_and_promote(tracking: Tracking, model: TokenEfficiencyModel, features: ContractFeatures,
                         best: CandidateEvaluation, prepared: Prepared, config: Models, fingerprint: str
                         ) -> tuple[str, PromotionDecision]:
    """Decide against the champion, register the new version, alias and tag it, and settle a concurrent promotion:
    (the new version, the decision that stands)."""
    champion, decision = decide_against_champion(tracking, best, prepared, config, fingerprint)
    version = log_version(model, features, input_example(prepared.data))
    # another training sharing the registry may have promoted a version meanwhile: decide against that one,
    # right before aliasing (what is left of the race is settled just after)
    for _ in range(3):
        current = version_by_alias(tracking.client, CHAMPION)
        if (current.version if current else None) == (champion.version if champion else None):
            break
        champion, decision = decide_against_champion(tracking, best, prepared, config, fingerprint)
    alias_and_tag(tracking, version, model, best, prepared.data, decision, fingerprint)
    return version, settle_concurrent_promotion(tracking, version, decision)


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


# --- recovery ---------------------------------------------------------------------------------------------------


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


def _fail_interrupted_runs(tracking: Tracking, cutoff: int, notes: list[str]) -> set[str]:
    """Mark a killed training's RUNNING runs FAILED; returns the RUNNING runs a live training still works on."""
    client = tracking.client
    live: set[str] = set()  # runs a training process is still working on (here or on another machine)
    if not tracking.experiment_id:
        return live
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
    return live


def recover_interrupted_training(tracking: Tracking, started_before_ms: int | None = None) -> list[str]:
    """Clean up after a training that was killed: its MLflow runs still say RUNNING and the version it may have
    registered has no alias and no decision. Mark those runs FAILED (tag `failure_reason`) and tag those
    versions `status_note`, so the UI tells the truth. Only runs started before `started_before_ms` (default:
    this process's start) are touched. Returns one line per thing fixed."""
    cutoff = PROCESS_STARTED_MS if started_before_ms is None else started_before_ms
    notes: list[str] = []
    live = _fail_interrupted_runs(tracking, cutoff, notes)
    try:
        versions: Sequence[ModelVersion] = tracking.client.search_model_versions(f"name = '{REGISTERED_MODEL}'")
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
        tracking.client.set_model_version_tag(REGISTERED_MODEL, version.version, TAG_STATUS_NOTE,
                                              INTERRUPTED_VERSION_NOTE)
        notes.append(f"version {version.version} was registered by an interrupted training: tagged `{TAG_STATUS_NOTE}`")
    for note in notes:
        log.warning("%s", note)
    return notes
