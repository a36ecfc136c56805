"""Prediction intervals from held-out residuals in log space (r = log(actual) - log(predicted)).

The registered model uses `NormalisedConformal` (below). `IntervalOffsets` is the summary kept in the
registry's tags and the training report (a row inside the training data, a row on an unseen GPU), and what
versions trained before normalised intervals use.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TypedDict, Unpack

import numpy as np
from scipy.optimize import lsq_linear


class CalibrationSettings(TypedDict):
    """NormalisedConformal.calibrate's settings (config/models.toml [intervals])."""

    min_flag_rows: int
    default_widening: float
    residual_floor: float


# (n+1) x level is often an integer that binary floating point lands just beside (20 x 0.1 = 1.9999...):
# ranks are rounded as if the arithmetic were exact
_EPS = 1e-9


@dataclass(frozen=True)
class IntervalOffsets:
    """Log-space offsets added to the predicted log MFU for the interval ends (seen GPU / unseen GPU)."""

    level: float
    seen_low: float
    seen_high: float
    unseen_low: float
    unseen_high: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


# --- Normalised conformal intervals (what the registered model uses) ---------------------------------------
#
# A row's log residual r is scored against a scale that grows with how far the row lies outside the training
# data: sigma(x) = exp(b0 + sum of b_f over the extrapolation flags f of the row), b_f >= 0. The interval is
# prediction x exp(+-q sigma(x)), with q the finite-sample conformal quantile of |r| / sigma over a pool of
# held-out residuals: every CV grouping (leave one source / GPU / precision family out) plus held-out
# configurations of seen sources (rows inside the training data), each row flagged relative to ITS fold's
# training rows. One q for every kind of row: the flags carry the difference in difficulty, so no grouping is
# calibrated on its own few folds (two precision families give two folds), and a new kind of extrapolation
# takes the widths the data showed for each flag it carries.

FLAG_KINDS: tuple[str, ...] = ("unseen_gpu", "unseen_precision_family", "unseen_framework",
                               "beyond_largest_cluster", "moe_little_data", "moe", "moe_shape_estimated",
                               "unseen_model", "ep_beyond_domain", "unseen_model_regime", "moe_unseen_framework",
                               "moe_new_framework")
# "moe" is on every MoE row (their errors differ from dense ones: own scale), "moe_shape_estimated" on MoE rows
# whose shape was estimated from the parameter counts, "unseen_model" on MoE rows whose model (total and active
# parameters) no training row has, "ep_beyond_domain" on MoE rows whose expert-parallel group leaves the scale-up
# domain, "unseen_model_regime" on MoE rows of a model trained on, but never in the row's regime (its precision
# family, 16-bit or fp8/fp4, and its expert-parallel placement, inside or beyond the scale-up domain). Versions
# trained before a kind existed carry fewer widenings: the kinds they do not know are ignored.
# "moe_unseen_framework" is derived, never written: a row flagged "moe", "unseen_framework" and "unseen_model" (an
# MoE model no training row has, from a framework no training row ran). A framework's MoE layer (its token
# dispatcher, grouped-GEMM kernels, all-to-all overlap) differs from another's far more than its dense layers do:
# held out by source, new-framework MoE rows were off by a median |log residual| of 0.43, known-framework ones by
# 0.09, while "unseen_framework", fitted mostly on dense rows, widened x 1.11 and MoE rows held 71% of the 80%
# interval (issue 38). A known model in a new regime ("unseen_model_regime") is left out of it: with it,
# leave-one-GPU-out coverage (each GPU once) rose past 85%.
# "moe_new_framework" is written on MoE rows whose framework text no MoE training row has (its dense rows may be
# known): the MoE layer is the framework's own; when it came, held out by source it widened x 1.36 and MoE coverage
# rose 72.6 -> 74.2% (leave-one-GPU-out, each GPU once, 84.7 -> 84.5%).
DERIVED_KINDS: dict[str, tuple[str, ...]] = {"moe_unseen_framework": ("moe", "unseen_framework", "unseen_model")}
#
# Novelty classes (Mondrian): the conformal quantile q is taken per class of what a row extrapolates over, because
# residuals of different classes are not exchangeable. "moe_new_model" (an MoE row of a model the training rows do
# not have, or have only in another regime: flag "unseen_model" or "unseen_model_regime"): the unit that arrives
# new is a model, not a run, so its residuals are weighted 1 / (runs of their model in the class) and q is the
# cluster-level conformal quantile (rank level x (models + 1) in the weights): one model with 20 runs counts as one
# model. "moe_seen_model" (an MoE model trained on in the row's regime, on a new GPU, framework or cluster size):
# the plain quantile of its residuals. Every other row: the pooled q. Fallback when a class has fewer than
# `min_flag_rows` residuals in the calibration pool or they come from fewer than MIN_CLASS_MODELS models (one
# model's runs say little about the class): the quantile of all MoE residuals, and with fewer than `min_flag_rows`
# of those the pooled q x `default_widening`.
NOVELTY_CLASSES: tuple[str, ...] = ("moe_new_model", "moe_seen_model")
MIN_CLASS_MODELS = 3


def flag_matrix(flags: list[str] | np.ndarray) -> np.ndarray:
    """Rows x FLAG_KINDS of 0/1 from comma-separated flag texts ("" = inside the training data)."""
    out = np.zeros((len(flags), len(FLAG_KINDS)))
    for i, text in enumerate(flags):
        named = set(str(text).split(",")) if text else set()
        named |= {kind for kind, parts in DERIVED_KINDS.items() if named.issuperset(parts)}
        out[i] = [kind in named for kind in FLAG_KINDS]
    return out


@dataclass(frozen=True)
class NormalisedConformal:
    """Symmetric log-space interval +-quantile x scale(row)."""

    level: float
    log_scale: float                  # b0: log of the scale of a row inside the training data
    log_widening: tuple[float, ...]   # b_f per FLAG_KINDS (>= 0): added to the log scale when the flag applies
    quantile: float                   # q: conformal quantile of |residual| / scale
    calibration_rows: int             # residuals in the pool
    # q of the MoE rows alone (Mondrian: their errors are not exchangeable with dense ones); None: the common q
    moe_quantile: float | None = None
    # per NOVELTY_CLASSES: the class's q (empty in versions trained before: moe_quantile for every MoE row)
    class_quantiles: tuple[float, ...] = ()
    # per FLAG_KINDS: True where the flag had too few residuals to be fitted and took the default widening; a row
    # carrying several such flags is widened by the largest of them once, not by their product (e.g. "moe" and
    # "moe_little_data", on the same rows whenever MoE data is scarce, are one extrapolation, not two)
    unfitted: tuple[bool, ...] = ()

    def quantiles(self, flags: list[str] | np.ndarray) -> np.ndarray:
        """Per row: the conformal quantile of its novelty class (versions trained before classes: the MoE one for
        rows flagged "moe", when calibrated; else the pooled one)."""
        by_class = getattr(self, "class_quantiles", ())
        if by_class:
            values = np.full(len(flags), self.quantile)
            classes = novelty_classes(flags)
            for name, q in zip(NOVELTY_CLASSES, by_class, strict=True):
                values[classes == name] = q
            return values
        moe_q = getattr(self, "moe_quantile", None)
        if moe_q is None:
            return np.full(len(flags), self.quantile)
        return np.where(flag_matrix(flags)[:, FLAG_KINDS.index("moe")] > 0, moe_q, self.quantile)

    def scale(self, flags: list[str] | np.ndarray) -> np.ndarray:
        widening = np.asarray(self.log_widening)
        matrix = flag_matrix(flags)[:, :len(widening)]
        unfitted = np.zeros(len(widening), dtype=bool)
        given = np.asarray(getattr(self, "unfitted", ()), dtype=bool)[:len(widening)]
        unfitted[:len(given)] = given
        once = (matrix[:, unfitted] * widening[unfitted]).max(axis=1, initial=0.0)
        values: np.ndarray = np.exp(self.log_scale + matrix[:, ~unfitted] @ widening[~unfitted] + once)
        return values

    def half_width(self, flags: list[str] | np.ndarray) -> np.ndarray:
        """Log-space half width of each row's interval: the interval is prediction x exp(+-half_width)."""
        values: np.ndarray = self.quantiles(flags) * self.scale(flags)
        return values

    def widening(self) -> dict[str, float]:
        """Flag -> factor on the interval's log half-width (1 = no wider than a row inside the training data)."""
        return {kind: math.exp(b) for kind, b in zip(FLAG_KINDS, self.log_widening, strict=False)}

    def to_dict(self) -> dict[str, float]:
        return {"level": self.level, "log_scale": self.log_scale, "quantile": self.quantile,
                "calibration_rows": float(self.calibration_rows),
                **({"moe_quantile": self.moe_quantile} if getattr(self, "moe_quantile", None) is not None else {}),
                **{f"quantile[{c}]": q for c, q in zip(NOVELTY_CLASSES, getattr(self, "class_quantiles", ()),
                                                       strict=False)},
                **{f"widening[{k}]": v for k, v in self.widening().items()}}

    @classmethod
    def calibrate(cls, residuals: np.ndarray, flags: list[str] | np.ndarray, level: float, min_flag_rows: int,
                  default_widening: float, residual_floor: float,
                  models: list[str] | np.ndarray | None = None) -> NormalisedConformal:
        """Fit the scale by least squares of log max(|r|, floor) on the flags (widenings bounded at >= 0; a flag
        on fewer than `min_flag_rows` residuals takes log `default_widening`, once per row however many such flags
        it carries), then q = the ceil((n+1) level)-th smallest |r| / scale (clamped to n), and per novelty class
        its own q (`models`: each residual's model, the cluster of the "moe_new_model" class; None: each residual
        its own)."""
        r = np.asarray(residuals, dtype="float64")
        ok = np.isfinite(r)
        clusters = (np.asarray(models, dtype=object) if models is not None
                    else np.arange(len(r)).astype(str).astype(object))[ok]
        r, matrix = r[ok], flag_matrix(np.asarray(flags, dtype=object)[ok])
        n = len(r)
        if n == 0:
            raise ValueError("no residuals to calibrate an interval")
        target = np.log(np.maximum(np.abs(r), residual_floor))
        widening = np.full(len(FLAG_KINDS), math.log(default_widening))
        fitted = matrix.sum(axis=0) >= min_flag_rows
        target_rest = target - (matrix[:, ~fitted] * widening[~fitted]).max(axis=1, initial=0.0)
        design = np.column_stack([np.ones(n), matrix[:, fitted]])
        lower = np.concatenate([[-np.inf], np.zeros(int(fitted.sum()))])
        solution = lsq_linear(design, target_rest, bounds=(lower, np.full(design.shape[1], np.inf))).x
        widening[fitted] = solution[1:]
        scores = np.abs(r) / cls(level=level, log_scale=float(solution[0]), log_widening=tuple(widening),
                                 quantile=1.0, calibration_rows=n, unfitted=tuple(bool(f) for f in ~fitted)
                                 ).scale(np.asarray(flags, dtype=object)[ok])
        moe = matrix[:, FLAG_KINDS.index("moe")] > 0
        # MoE rows get their own quantile once there are enough of them; the others keep the pooled one
        moe_quantile = _conformal_quantile(scores[moe], level) if moe.sum() >= min_flag_rows else None
        quantile = _conformal_quantile(scores, level)
        classes = novelty_classes(np.asarray(flags, dtype=object)[ok])
        fallback = moe_quantile if moe_quantile is not None else quantile * default_widening
        class_quantiles = []
        for name in NOVELTY_CLASSES:
            inside = classes == name
            if inside.sum() < min_flag_rows or len(set(clusters[inside])) < MIN_CLASS_MODELS:
                class_quantiles.append(fallback)
            elif name == "moe_new_model":
                class_quantiles.append(cluster_conformal_quantile(scores[inside], clusters[inside], level))
            else:
                class_quantiles.append(_conformal_quantile(scores[inside], level))
        return cls(level=level, log_scale=float(solution[0]), log_widening=tuple(float(b) for b in widening),
                   quantile=quantile, calibration_rows=n, moe_quantile=moe_quantile,
                   unfitted=tuple(bool(f) for f in ~fitted), class_quantiles=tuple(class_quantiles))


def novelty_classes(flags: list[str] | np.ndarray) -> np.ndarray:
    """Per row: "moe_new_model" (flag "moe" with "unseen_model" or "unseen_model_regime"), "moe_seen_model" ("moe"
    without either: the model was trained on in this regime), else ""."""
    matrix = flag_matrix(flags)
    moe = matrix[:, FLAG_KINDS.index("moe")] > 0
    new = (matrix[:, FLAG_KINDS.index("unseen_model")] > 0) | (matrix[:, FLAG_KINDS.index("unseen_model_regime")] > 0)
    values: np.ndarray = np.where(moe & new, "moe_new_model", np.where(moe, "moe_seen_model", "")).astype(object)
    return values


def cluster_conformal_quantile(scores: np.ndarray, clusters: np.ndarray, level: float) -> float:
    """The conformal quantile when residuals come in clusters (runs of one model) and the cluster is the unit that
    arrives new: each score weighs 1 / (scores of its cluster), so the K clusters weigh 1 each, and q is the
    smallest score whose cumulative weight reaches level x (K + 1) (the finite-sample rank among K + 1 clusters;
    the largest score when it is never reached)."""
    _, index, counts = np.unique(np.asarray(clusters).astype(str), return_inverse=True, return_counts=True)
    weights = 1.0 / counts[index]
    order = np.argsort(scores, kind="stable")
    cumulative = np.cumsum(weights[order])
    rank = int(np.searchsorted(cumulative, level * (len(counts) + 1) - _EPS))
    return float(np.asarray(scores)[order][min(rank, len(order) - 1)])


def _conformal_quantile(scores: np.ndarray, level: float) -> float:
    """The ceil((n+1) level)-th smallest score (clamped to n): the finite-sample conformal quantile."""
    ordered = np.sort(scores)
    n = len(ordered)
    return float(ordered[min(n, math.ceil((n + 1) * level - _EPS)) - 1])


@dataclass(frozen=True)
class CalibrationPool:
    """Held-out residuals with their row index (into the training rows) and flags, from several CV groupings."""

    residuals: np.ndarray
    rows: np.ndarray
    flags: np.ndarray
    models: np.ndarray | None = None   # per residual: its row's model (the "moe_new_model" class's clusters)

    @classmethod
    def concat(cls, parts: list[tuple[np.ndarray, np.ndarray, list[str] | np.ndarray]],
               models_of_rows: list[str] | np.ndarray | None = None) -> CalibrationPool:
        rows = np.concatenate([np.asarray(p[1]) for p in parts])
        return cls(residuals=np.concatenate([np.asarray(p[0], dtype="float64") for p in parts]),
                   rows=rows, flags=np.concatenate([np.asarray(p[2], dtype=object) for p in parts]),
                   models=None if models_of_rows is None else np.asarray(models_of_rows, dtype=object)[rows])

    def without_rows(self, rows: np.ndarray) -> CalibrationPool:
        keep = ~np.isin(self.rows, rows)
        return CalibrationPool(self.residuals[keep], self.rows[keep], self.flags[keep],
                               None if self.models is None else self.models[keep])


def normalised_fold_coverage(pool: CalibrationPool, residuals: np.ndarray, flags: list[str] | np.ndarray,
                             fold_of_row: np.ndarray, level: float, **calibration: Unpack[CalibrationSettings]
                             ) -> tuple[float, dict[int, float]]:
    """Honest coverage of one grouping: each fold's rows (their held-out residuals and flags under this grouping)
    against an interval calibrated on the pool WITHOUT those rows (under any grouping). Returns (pooled
    coverage, fold index -> coverage)."""
    hits = normalised_fold_hits(pool, residuals, flags, fold_of_row, level, **calibration)
    per_fold = {int(fold): float(np.nanmean(hits[fold_of_row == fold]))
                for fold in np.unique(fold_of_row[(fold_of_row >= 0) & np.isfinite(hits)])}
    scored = np.isfinite(hits)
    return (float(hits[scored].mean()) if scored.any() else float("nan")), per_fold


def normalised_fold_hits(pool: CalibrationPool, residuals: np.ndarray, flags: list[str] | np.ndarray,
                         fold_of_row: np.ndarray, level: float,
                         **calibration: Unpack[CalibrationSettings]) -> np.ndarray:
    """Per row: 1 when its held-out residual lies inside the interval calibrated without its fold's rows, 0 when
    not, NaN for a row in no fold (so coverage can be read for any subset of rows, e.g. the MoE runs)."""
    flags = np.asarray(flags, dtype=object)
    hits = np.full(len(fold_of_row), np.nan)
    for fold in np.unique(fold_of_row[fold_of_row >= 0]):
        inside = np.flatnonzero(fold_of_row == fold)
        calibration_pool = pool.without_rows(inside)
        if len(calibration_pool.residuals) == 0:
            continue
        conformal = NormalisedConformal.calibrate(calibration_pool.residuals, calibration_pool.flags, level,
                                                  models=calibration_pool.models, **calibration)
        hits[inside] = np.abs(residuals[inside]) <= conformal.half_width(flags[inside])
    return hits
