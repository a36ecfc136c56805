"""Training data, grouped cross-validation splits and metrics on tokens/s per GPU.

Splits are grouped (all runs of one GPU type, or of one source repository, are held out together) and
deterministic: rows are sorted by run_id and the splitters do not shuffle, so the same data always yields
the same folds, for the candidates and for the re-scored champion alike.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import polars as pl
from sklearn.base import clone
from sklearn.model_selection import GroupKFold, LeaveOneGroupOut

from tasks.model.candidates import CandidateSpec, build_pipeline
from tasks.model.config import Target
from tasks.model.design import PHYSICS_BOUND, TARGET, log_mfu, tokens_per_sec
from tasks.progress import tick

METRICS = ("mse", "rmse", "mae", "r2", "median_ape")


@dataclass(frozen=True)
class TargetSpec:
    """Physical limits on predicted MFU (config [target])."""

    min_mfu: float = 0.01
    max_mfu: float = 1.0

    @classmethod
    def from_config(cls, target: Target) -> TargetSpec:
        return cls(min_mfu=float(target.min_mfu), max_mfu=float(target.max_mfu))

    def clip(self, log_mfu_values: np.ndarray) -> np.ndarray:
        values: np.ndarray = np.clip(
            np.asarray(log_mfu_values, dtype="float64"), math.log(self.min_mfu), math.log(self.max_mfu))
        return values


@dataclass(frozen=True)
class TrainingData:
    """Feature rows with a usable target, in a fixed order, plus what identifies them."""

    frame: pd.DataFrame          # contract-1 feature rows, sorted by run_id
    log_mfu: np.ndarray          # target: log(tokens/s/GPU ÷ physics bound)
    tokens_per_sec: np.ndarray   # tokens/s per GPU as measured
    physics_bound: np.ndarray    # tokens/s per GPU at MFU 1
    digest: str                  # sha256 of the rows (sorted, CSV): same digest = same data
    dropped_rows: int            # rows of the table without a usable target or physics bound

    @property
    def rows(self) -> int:
        return len(self.frame)

    def groups(self, grouping: str) -> np.ndarray:
        """Each row's group; under a grouping of ALWAYS_TRAINED_WHEN_NULL a row without one is ALWAYS_TRAINED."""
        missing = ALWAYS_TRAINED if grouping in ALWAYS_TRAINED_WHEN_NULL else "unknown"
        return self.frame[grouping].fillna(missing).astype(str).to_numpy()


# Groupings that hold out only the rows that have a group: leave-one-MoE-family-out holds out one MoE family at a
# time, and the dense runs (no family) train every fold. Such rows are never held out, so they have no out-of-fold
# prediction under that grouping (NaN; its metrics pool the held-out rows).
ALWAYS_TRAINED = "(always trained)"
ALWAYS_TRAINED_WHEN_NULL = frozenset({"moe_family"})


def prepare_training_data(features: pl.DataFrame) -> TrainingData:
    """Keep rows whose target and physics bound are positive and finite; order by run_id."""
    usable = features.filter(
        pl.col(TARGET).is_not_null() & pl.col(TARGET).is_finite() & (pl.col(TARGET) > 0)
        & pl.col(PHYSICS_BOUND).is_not_null() & pl.col(PHYSICS_BOUND).is_finite() & (pl.col(PHYSICS_BOUND) > 0)
    ).sort("run_id")
    digest = hashlib.sha256(usable.write_csv().encode("utf-8")).hexdigest()
    frame = usable.to_pandas()
    tokens = frame[TARGET].to_numpy(dtype="float64")
    bound = frame[PHYSICS_BOUND].to_numpy(dtype="float64")
    return TrainingData(frame=frame, log_mfu=log_mfu(tokens, bound), tokens_per_sec=tokens, physics_bound=bound,
                        digest=digest, dropped_rows=features.height - usable.height)


@dataclass(frozen=True)
class Fold:
    index: int
    held_out: str                 # the group(s) held out, e.g. "H100-SXM"
    train: np.ndarray
    test: np.ndarray


def grouped_folds(groups: np.ndarray, max_folds: int) -> list[Fold]:
    """Leave one group out while there are at most `max_folds` groups, else GroupKFold(max_folds). Rows of the
    group ALWAYS_TRAINED are in every fold's training rows and no fold's test rows."""
    groups = np.asarray(groups)
    always = np.flatnonzero(groups == ALWAYS_TRAINED)
    held = np.flatnonzero(groups != ALWAYS_TRAINED)
    n_groups = len(np.unique(groups[held]))
    if n_groups == 1 and len(always):   # one group held out against the always-trained rows
        return [Fold(index=0, held_out=str(groups[held[0]]), train=always, test=held)]
    if n_groups < 2:
        raise ValueError(f"grouped cross-validation needs at least 2 groups, got {n_groups}")
    splitter = LeaveOneGroupOut() if n_groups <= max_folds else GroupKFold(n_splits=max_folds)
    folds = []
    for index, (train, test) in enumerate(splitter.split(np.zeros(len(held)), groups=groups[held])):
        folds.append(Fold(index=index, held_out="+".join(sorted(np.unique(groups[held[test]]))),
                          train=np.sort(np.concatenate([held[train], always])), test=held[test]))
    return folds


def cv_folds(data: TrainingData, groupings: Sequence[str], max_folds: int) -> dict[str, list[Fold]]:
    """The folds of every grouping; a grouping of ALWAYS_TRAINED_WHEN_NULL none of whose rows has a group (e.g.
    moe_family on dense telemetry alone) is left out, as there is nothing to hold out."""
    return {g: grouped_folds(data.groups(g), max_folds) for g in groupings
            if g not in ALWAYS_TRAINED_WHEN_NULL or (data.groups(g) != ALWAYS_TRAINED).any()}


def regression_metrics(actual: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Errors on tokens/s per GPU. median_ape is a fraction (0.12 = 12%)."""
    actual = np.asarray(actual, dtype="float64")
    predicted = np.asarray(predicted, dtype="float64")
    error = predicted - actual
    mse = float(np.mean(error**2))
    total = float(np.sum((actual - actual.mean()) ** 2))
    r2 = 1.0 - float(np.sum(error**2)) / total if len(actual) > 1 and total > 0 else float("nan")
    return {"mse": mse, "rmse": math.sqrt(mse), "mae": float(np.mean(np.abs(error))), "r2": r2,
            "median_ape": float(np.median(np.abs(error) / actual))}


@dataclass
class GroupedCV:
    """Out-of-fold results of one candidate under one grouping."""

    grouping: str
    folds: list[Fold]
    fold_metrics: list[dict[str, float]]
    oof_log_mfu: np.ndarray               # clipped out-of-fold prediction per row
    fold_of_row: np.ndarray               # fold index per row
    pooled: dict[str, float] = field(default_factory=dict)
    flags: np.ndarray | None = None       # per row: extrapolation flags relative to its fold's training rows

    @property
    def row_flags(self) -> np.ndarray:
        """`flags`, for a caller that needs them (the intervals): cross-validated without a flagger, there are none."""
        if self.flags is None:
            raise ValueError(f"cross-validation under {self.grouping} ran without a flagger: no extrapolation flags")
        return self.flags

    def residuals(self, data: TrainingData) -> np.ndarray:
        """Out-of-fold residuals in log space: log(actual) - log(predicted)."""
        values: np.ndarray = data.log_mfu - self.oof_log_mfu
        return values


# (training rows, held-out rows) -> each held-out row's extrapolation flags ("unseen_gpu,unseen_framework", "")
Flagger = Callable[[pd.DataFrame, pd.DataFrame], list[str]]


def cross_validate(spec: CandidateSpec, data: TrainingData, grouping: str, folds: Sequence[Fold],
                   target: TargetSpec, flagger: Flagger | None = None) -> GroupedCV:
    """Fit `spec` on each fold's training rows, predict its held-out rows; metrics per fold and pooled; with a
    `flagger`, also each held-out row's extrapolation flags relative to its fold's training rows."""
    template = build_pipeline(spec)
    oof = np.full(data.rows, np.nan)
    fold_of_row = np.full(data.rows, -1)
    flags = np.full(data.rows, "", dtype=object) if flagger is not None else None
    fold_metrics = []
    for number, fold in enumerate(folds, start=1):
        tick("%s: leave one %s out, fold %d of %d", spec.name, grouping, number, len(folds))
        model = clone(template).fit(data.frame.iloc[fold.train], data.log_mfu[fold.train])
        predicted = target.clip(model.predict(data.frame.iloc[fold.test]))
        oof[fold.test] = predicted
        fold_of_row[fold.test] = fold.index
        if flags is not None and flagger is not None:
            flags[fold.test] = flagger(data.frame.iloc[fold.train], data.frame.iloc[fold.test])
        fold_metrics.append(regression_metrics(data.tokens_per_sec[fold.test],
                                               tokens_per_sec(predicted, data.physics_bound[fold.test])))
    scored = fold_of_row >= 0   # every row, but those a grouping always trains on
    pooled = regression_metrics(data.tokens_per_sec[scored], tokens_per_sec(oof[scored], data.physics_bound[scored]))
    return GroupedCV(grouping=grouping, folds=list(folds), fold_metrics=fold_metrics, oof_log_mfu=oof,
                     fold_of_row=fold_of_row, pooled=pooled, flags=flags)


def selection_score(results: Mapping[str, GroupedCV], metric: str = "median_ape") -> float:
    """Champion score: mean over groupings of the pooled out-of-fold metric (lower is better)."""
    return float(np.mean([cv.pooled[metric] for cv in results.values()]))


def no_worse_than_baseline(candidate: Mapping[str, GroupedCV], baseline: Mapping[str, GroupedCV],
                           metric: str = "median_ape") -> list[str]:
    """The groupings on which `candidate` is WORSE than the constant-MFU baseline (empty: eligible)."""
    return [g for g in baseline if candidate[g].pooled[metric] > baseline[g].pooled[metric]]


def select_best(results: Sequence[tuple[str, Mapping[str, GroupedCV], float]], baseline: str,
                metric: str = "median_ape") -> tuple[str, dict[str, list[str]]]:
    """The champion rule: among candidates no worse than the baseline on ANY grouping, the lowest score
    (ties keep the given order); the baseline is always eligible. `results` are (name, cv by grouping,
    score). Returns (winner, candidate -> groupings where it lost to the baseline)."""
    by_name = {name: cv for name, cv, _ in results}
    losses = {name: no_worse_than_baseline(cv, by_name[baseline], metric) for name, cv, _ in results}
    eligible = [(name, score) for name, _, score in results if not losses[name]]
    return min(eligible, key=lambda item: item[1])[0], {k: v for k, v in losses.items() if v}

