"""Train the token-efficiency model: the stages of tasks.model.pipeline (prepare -> cross-validate -> select ->
fit -> calibrate) inside the MLflow runs of tasks.model.registry, which registers the best with calibrated
intervals and promotes it to `champion` only if it beats the current champion re-scored on the same data and the
same splits; tasks.model.report says what happened."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import polars as pl
from threadpoolctl import threadpool_limits

from tasks import progress
from tasks.model import registry
from tasks.model.config import Models
from tasks.model.contract_rows import ContractFeatures
from tasks.model.design import moe_rows
from tasks.model.pipeline import (
    CandidateEvaluation,
    NotEnoughTelemetryError,
    Prepared,
    Selection,
    configuration_groups,
    evaluate_candidate,
    extrapolation_flagger,
    fit_model,
    prepare,
    read_training_features,
    select,
)
from tasks.model.report import TrainingOutcome
from tasks.model.serving import TokenEfficiencyModel
from tasks.model.tracking import CHALLENGER, CHAMPION, Tracking, connect_tracking
from tasks.settings import Resources

# what callers of the training step import from here
__all__ = ["NotEnoughTelemetryError", "TrainingOutcome", "configuration_groups", "evaluate_candidate",
           "extrapolation_flagger", "moe_rows", "read_training_features", "train_and_register"]

log = logging.getLogger("gpucost.train")


def train_and_register(features: pl.DataFrame, config: Models | Mapping[str, Any], resources: Resources,
                       contract: ContractFeatures) -> TrainingOutcome:
    """The whole training step on a feature table (rows of features.training_runs): `config` is config/models.toml,
    the store `resources.tracking_uri`, and `contract` how contract rows become features (it travels with the model)."""
    started = time.perf_counter()
    # plain tables (tests, scripts) are completed by the typed model: its defaults are the only ones
    models = config if isinstance(config, Models) else Models.model_validate(config)
    prepared = prepare(features, models)
    tracking = connect_tracking(resources.tracking_uri, resources.home)
    registry.recover_interrupted_training(tracking)
    # OpenMP threads per model: on a few hundred rows, thread start-up costs more than the work it splits;
    # results are identical
    with threadpool_limits(limits=int(models.compute.openmp_threads), user_api="openmp"):
        return _train(prepared, models, tracking, contract, started)


def _cross_validate(prepared: Prepared, config: Models, tracking: Tracking, dataset: Any
                    ) -> list[CandidateEvaluation]:
    """Stage 2: every candidate cross-validated, each logged as a nested run as soon as it is done."""
    data, specs = prepared.data, prepared.specs
    evaluations = []
    for number, spec in enumerate(specs, start=1):
        progress.step("train: candidate %d of %d: %s (%d rows)", number, len(specs), spec.name, data.rows)
        evaluation = evaluate_candidate(spec, data, prepared.folds, prepared.target, config)
        registry.candidate_run(tracking, evaluation, data, dataset, int(config.compute.residual_plot_dpi))
        evaluations.append(evaluation)
        log.info("%s: score %.4f (%s)", spec.name, evaluation.score,
                 ", ".join(f"{g} median APE {evaluation.median_ape(g):.1%}" for g in prepared.folds))
    return evaluations


def _train(prepared: Prepared, config: Models, tracking: Tracking, contract: ContractFeatures,
           started: float) -> TrainingOutcome:
    with registry.training_run(tracking, prepared, config) as (run_id, dataset):
        evaluations = _cross_validate(prepared, config, tracking, dataset)
        selection = select(evaluations, config)
        best = selection.best
        fingerprint = registry.training_fingerprint(prepared.data, best.spec, config, contract)
        registry.set_run_fingerprint(fingerprint)
        model = fit_model(best, prepared.data, prepared.target, config)
        same = registry.version_with_fingerprint(tracking, fingerprint)
        if same is not None:
            alias, reason = registry.log_unchanged(tracking, same, fingerprint, best, prepared.data)
            outcome = _outcome(prepared, evaluations, selection, model, str(same.version), alias, reason, None,
                               run_id)
            outcome.registered = False
        else:
            version, decision = registry.register_and_promote(tracking, model, contract, best, prepared, config,
                                                              fingerprint)
            registry.log_registered(selection, model, version, decision)
            alias = CHAMPION if decision.promote else CHALLENGER
            log.info("version %s -> %s: %s", version, alias, decision.reason)
            outcome = _outcome(prepared, evaluations, selection, model, version, alias, decision.reason,
                               decision.champion_score, run_id)
        outcome.wall_seconds = time.perf_counter() - started
        registry.log_wall_seconds(outcome.wall_seconds)
    return outcome


def _outcome(prepared: Prepared, evaluations: list[CandidateEvaluation], selection: Selection,
             model: TokenEfficiencyModel, version: str, alias: str, reason: str, champion_rescored: float | None,
             run_id: str) -> TrainingOutcome:
    """The training's outcome (its wall time is set once known)."""
    best = selection.best
    return TrainingOutcome(
        version=version, alias=alias, reason=reason, best=best.spec.name,
        scores={e.spec.name: e.score for e in evaluations},
        median_ape={e.spec.name: {g: e.median_ape(g) for g in prepared.folds} for e in evaluations},
        coverage=best.coverage, intervals=model.intervals,
        champion_rescored=champion_rescored, rows=prepared.data.rows, digest=prepared.data.digest, run_id=run_id,
        wall_seconds=0.0)
