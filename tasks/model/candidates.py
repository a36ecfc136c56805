"""Candidate models, built from a self-describing spec (name, kind, params, features, seed).

The spec is stored with every registered version, so the champion can be rebuilt and re-scored on new data
and new CV splits instead of being compared through stale logged numbers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pydantic_core import to_jsonable_python
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.linear_model import Lasso, LinearRegression, Ridge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import PolynomialFeatures
from sklearn.svm import SVR

from tasks.model.config import Models
from tasks.model.design import FeatureSpec, design_frame, design_step, preprocessor
from tasks.model.structured import STRUCTURED_CATEGORICAL, STRUCTURED_NUMERIC, StructuredStepTime

BASELINE_KIND = "constant_mfu"
STRUCTURED_KIND = "structured_step_time"          # physics-first step time (tasks/model/structured.py)
RESIDUAL_KIND = "structured_residual_hgb"         # + gradient boosting on its log residual, no GPU identity
STRUCTURED_KINDS = (STRUCTURED_KIND, RESIDUAL_KIND)
STRUCTURED_FEATURES = FeatureSpec(numeric=STRUCTURED_NUMERIC, categorical=STRUCTURED_CATEGORICAL)


class StructuredPlusResidual(RegressorMixin, BaseEstimator):
    """The structured model, then a gradient-boosted correction of its log residual learned from columns that
    do not name the GPU (model size, sequence, scale, recipe, checkpointing...), so it cannot memorise which
    GPU it saw; `shrink` scales the correction (0 = the structured model alone)."""

    def __init__(self, physics: Mapping[str, Any] | None = None, residual_features: FeatureSpec | None = None,
                 params: Mapping[str, Any] | None = None, shrink: float = 0.5, seed: int = 0) -> None:
        self.physics = physics
        self.residual_features = residual_features
        self.params = params
        self.shrink = shrink
        self.seed = seed

    def fit(self, X: pd.DataFrame, y: np.ndarray) -> StructuredPlusResidual:
        self.structured_ = StructuredStepTime(self.physics).fit(X, y)
        residual = np.asarray(y, dtype="float64") - self.structured_.predict(X)
        features = self.residual_features or FeatureSpec()
        self.correction_ = Pipeline([
            ("design", design_step(features)), ("preprocess", preprocessor(features)),
            ("model", HistGradientBoostingRegressor(random_state=self.seed, **dict(self.params or {}))),
        ]).fit(X, residual)
        design = design_frame(X, features)
        self.seen_levels_ = {c: set(design[c].dropna().astype(str)) for c in features.categorical}
        return self

    def applies(self, X: pd.DataFrame) -> np.ndarray:
        """Rows the correction was learned for: every categorical value (recipe, workload, checkpointing) one
        its training rows had. Elsewhere (e.g. an fp4 recipe it never saw) a correction learned from other
        recipes is no evidence, so the row gets the structured model alone."""
        seen = getattr(self, "seen_levels_", None)
        if not seen:
            return np.ones(len(X), dtype=bool)
        design = design_frame(X, self.residual_features or FeatureSpec())
        ok = np.ones(len(X), dtype=bool)
        for column, levels in seen.items():
            values = design[column]
            ok &= (values.isna() | values.astype(str).isin(levels)).to_numpy()
        return ok

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        correction = np.where(self.applies(X), self.correction_.predict(X), 0.0)
        return self.structured_.predict(X) + self.shrink * correction


class ConstantMfuPerPrecision(RegressorMixin, BaseEstimator):
    """The physics baseline: tokens/s = MFU × peak ÷ FLOPs per token, with one MFU per precision.

    In log-MFU space that is a constant per precision: the median log MFU of the training rows of that
    precision (the global median for a precision the training rows do not have).
    """

    def fit(self, X: pd.DataFrame, y: np.ndarray) -> ConstantMfuPerPrecision:
        y = np.asarray(y, dtype="float64")
        precision = X["precision"].astype(object).to_numpy()
        self.global_log_mfu_ = float(np.median(y))
        self.log_mfu_by_precision_ = {
            str(level): float(np.median(y[precision == level]))
            for level in pd.unique(precision) if isinstance(level, str)
        }
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return np.array(
            [self.log_mfu_by_precision_.get(p, self.global_log_mfu_) if isinstance(p, str) else self.global_log_mfu_
             for p in X["precision"].astype(object)],
            dtype="float64",
        )


@dataclass(frozen=True)
class CandidateSpec:
    name: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    features: FeatureSpec = field(default_factory=FeatureSpec)
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "params": dict(self.params),
                "features": self.features.to_dict(), "seed": self.seed}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CandidateSpec:
        return cls(name=data["name"], kind=data["kind"], params=dict(data.get("params", {})),
                   features=FeatureSpec.from_config(data.get("features", {})), seed=int(data.get("seed", 0)))

    @classmethod
    def from_json(cls, text: str) -> CandidateSpec:
        return cls.from_dict(json.loads(text))

    @property
    def uses_features(self) -> FeatureSpec:
        """The baseline sees precision only, whatever the configured features; the structured model the
        columns its step-time parts need (plus, with a residual learner, that learner's columns)."""
        if self.kind == BASELINE_KIND:
            return FeatureSpec(categorical=("precision",))
        if self.kind == STRUCTURED_KIND:
            return STRUCTURED_FEATURES
        if self.kind == RESIDUAL_KIND:
            residual = FeatureSpec.from_config(self.params.get("residual_features", {}))
            return FeatureSpec(log_numeric=residual.log_numeric,
                               numeric=STRUCTURED_NUMERIC + tuple(c for c in residual.numeric
                                                                  if c not in STRUCTURED_NUMERIC),
                               categorical=STRUCTURED_CATEGORICAL + tuple(c for c in residual.categorical
                                                                          if c not in STRUCTURED_CATEGORICAL))
        return self.features


def candidate_specs(config: Models) -> list[CandidateSpec]:
    """The candidates of config/models.toml, in file order (their params, physics and residual features as the
    plain JSON tables a spec carries)."""
    features = FeatureSpec(log_numeric=tuple(config.features.log_numeric), numeric=tuple(config.features.numeric),
                           categorical=tuple(config.features.categorical))
    seed = int(config.seed)
    specs = []
    for c in config.candidates:
        params: dict[str, Any] = to_jsonable_python(c.params)
        if c.kind in STRUCTURED_KINDS:
            # the physics constants travel in the spec, so a registered version can be rebuilt and re-scored
            params["physics"] = to_jsonable_python(config.structured)
        if c.kind == RESIDUAL_KIND:
            params["residual_features"] = to_jsonable_python(config.residual_features)
        specs.append(CandidateSpec(name=c.name, kind=c.kind, params=params, features=features, seed=seed))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"config/models.toml: candidate names must be unique, got {names}")
    if not any(s.kind == BASELINE_KIND for s in specs):
        raise ValueError(f"config/models.toml: a `{BASELINE_KIND}` candidate (the physics baseline) is required")
    return specs


def _estimator(kind: str, params: Mapping[str, Any], seed: int) -> list[tuple[str, Any]]:
    """Estimator steps after the shared preprocessor, for one candidate kind."""
    p = dict(params)
    match kind:
        case "linear_regression":
            return [("model", LinearRegression(**p))]
        case "ridge":
            return [("model", Ridge(**p))]
        case "lasso":
            return [("model", Lasso(random_state=seed, **p))]
        case "poly_ridge":
            degree = p.pop("degree", 2)
            return [("poly", PolynomialFeatures(degree=degree, include_bias=False)), ("model", Ridge(**p))]
        case "svr":
            return [("model", SVR(**p))]
        case "random_forest":
            return [("model", RandomForestRegressor(random_state=seed, n_jobs=1, **p))]
        case "hist_gradient_boosting":
            return [("model", HistGradientBoostingRegressor(random_state=seed, **p))]
    raise ValueError(f"unknown candidate kind {kind!r}")


def build_pipeline(spec: CandidateSpec) -> Pipeline:
    """An unfitted pipeline: raw contract-1 feature rows (pandas) -> predicted log MFU."""
    features = spec.uses_features
    if spec.kind == STRUCTURED_KIND:
        return Pipeline([("model", StructuredStepTime(spec.params.get("physics")))])
    if spec.kind == RESIDUAL_KIND:
        p = dict(spec.params)
        return Pipeline([("model", StructuredPlusResidual(
            physics=p.pop("physics", None), residual_features=FeatureSpec.from_config(p.pop("residual_features", {})),
            shrink=float(p.pop("shrink", 0.5)), params=p, seed=spec.seed))])
    if spec.kind == BASELINE_KIND:
        return Pipeline([("design", design_step(features)), ("model", ConstantMfuPerPrecision())])
    return Pipeline([("design", design_step(features)), ("preprocess", preprocessor(features)),
                     *_estimator(spec.kind, spec.params, spec.seed)])
