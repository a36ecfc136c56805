"""Split-conformal prediction intervals from out-of-fold residuals in log space.

A residual r = log(actual) - log(predicted). The interval for a new run is
[predicted × exp(lo), predicted × exp(hi)], with lo/hi the conformal quantiles of the residuals. GPUs present
in the training data are calibrated with residuals from the source-grouped CV (a new setup on a known GPU);
GPUs without telemetry with the leave-one-GPU-out residuals (a GPU the model has never seen), and never
narrower than the seen-GPU interval. For an unseen GPU the direction of the error is unknown too (held-out H100
runs came out slower than predicted, but another GPU may come out faster), so its interval is also at least the
symmetric +-q, with q the conformal quantile of |residual|.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

# (n+1) x level is often an integer that binary floating point lands just beside (20 x 0.1 = 1.9999...):
# ranks are rounded as if the arithmetic were exact
_EPS = 1e-9


def conformal_bounds(residuals: np.ndarray, level: float) -> tuple[float, float]:
    """Lower and upper residual quantiles of a two-sided split-conformal interval at `level` coverage.

    With n calibration residuals sorted ascending, the upper bound is the ceil((n+1)(1+level)/2)-th smallest
    (the finite-sample correction: a little wider than the plain quantile), the lower bound the
    floor((n+1)(1-level)/2)-th smallest; ranks are clamped to 1..n.
    """
    r = np.sort(np.asarray(residuals, dtype="float64")[np.isfinite(residuals)])
    n = len(r)
    if n == 0:
        raise ValueError("no residuals to calibrate an interval")
    alpha = 1.0 - level
    upper_rank = min(n, math.ceil((n + 1) * (1.0 - alpha / 2.0) - _EPS))
    lower_rank = max(1, math.floor((n + 1) * (alpha / 2.0) + _EPS))
    return float(r[lower_rank - 1]), float(r[upper_rank - 1])


def symmetric_bound(residuals: np.ndarray, level: float) -> float:
    """The conformal quantile of |residual| at `level`: the ceil((n+1) level)-th smallest, clamped to n."""
    r = np.sort(np.abs(np.asarray(residuals, dtype="float64")[np.isfinite(residuals)]))
    if len(r) == 0:
        raise ValueError("no residuals to calibrate an interval")
    return float(r[min(len(r), math.ceil((len(r) + 1) * level - _EPS)) - 1])


def unseen_bounds(residuals: np.ndarray, level: float) -> tuple[float, float]:
    """Signed conformal bounds widened to at least the symmetric +-q (direction of the error unknown)."""
    low, high = conformal_bounds(residuals, level)
    q = symmetric_bound(residuals, level)
    return min(low, -q), max(high, q)


def cross_fold_coverage(residuals: np.ndarray, fold_of_row: np.ndarray, level: float, unseen: bool = False) -> float:
    """Honest coverage: each fold's rows against bounds calibrated on the OTHER folds' residuals.

    (Bounds calibrated on all residuals would cover ~level of those same residuals by construction.)
    `unseen` uses the unseen-GPU construction (`unseen_bounds`).
    """
    covered = 0
    total = 0
    for fold in np.unique(fold_of_row):
        inside = fold_of_row == fold
        if inside.all():
            continue
        lo, hi = (unseen_bounds if unseen else conformal_bounds)(residuals[~inside], level)
        covered += int(np.sum((residuals[inside] >= lo) & (residuals[inside] <= hi)))
        total += int(inside.sum())
    return covered / total if total else float("nan")


@dataclass(frozen=True)
class IntervalOffsets:
    """Log-space offsets added to the predicted log MFU for the interval ends."""

    level: float
    seen_low: float
    seen_high: float
    unseen_low: float
    unseen_high: float

    @classmethod
    def calibrate(cls, seen_residuals: np.ndarray, unseen_residuals: np.ndarray, level: float) -> IntervalOffsets:
        seen_low, seen_high = conformal_bounds(seen_residuals, level)
        unseen_low, unseen_high = unseen_bounds(unseen_residuals, level)
        # an unseen GPU is never more certain than a seen one
        return cls(level=level, seen_low=seen_low, seen_high=seen_high,
                   unseen_low=min(unseen_low, seen_low), unseen_high=max(unseen_high, seen_high))

    def to_dict(self) -> dict[str, float]:
        return asdict(self)
