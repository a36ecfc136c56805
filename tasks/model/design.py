"""The design matrix, in one place: which feature columns a model sees, how they are typed, derived, imputed,
scaled and encoded, and the target space (log MFU) with its conversion back to tokens/s per GPU.

Every candidate is a scikit-learn Pipeline whose first step is `design_frame`, so training, cross-validation
and prediction can never disagree about the features.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

TARGET = "tokens_per_sec_per_gpu"  # tokens/s per GPU (contract 1)
PHYSICS_BOUND = "physics_bound_tokens_per_sec_per_gpu"  # tokens/s per GPU at MFU 1 (contract 1)


def moe_mask(total: np.ndarray, active: np.ndarray) -> np.ndarray:
    """True where a run is MoE: fewer active than total parameters, both known (the one definition)."""
    values: np.ndarray = np.isfinite(total) & np.isfinite(active) & (active < total * 0.999)
    return values


def moe_rows(frame: pd.DataFrame) -> np.ndarray:
    """True for MoE runs of a frame with `params_b` and `active_params_b`."""
    return moe_mask(pd.to_numeric(frame["params_b"], errors="coerce").to_numpy(dtype="float64"),
                    pd.to_numeric(frame["active_params_b"], errors="coerce").to_numpy(dtype="float64"))


def model_keys(frame: pd.DataFrame) -> list[str]:
    """A model's identity: its total and active parameters (B, one decimal), e.g. "314.0/86.0"; runs of one model
    are one unit of evidence (the intervals' clusters, the framework factors' shrinkage)."""
    total = pd.to_numeric(frame["params_b"], errors="coerce").round(1)
    active = pd.to_numeric(frame["active_params_b"], errors="coerce").round(1)
    return [f"{t}/{a}" for t, a in zip(total, active, strict=True)]

# Derived inside the pipeline from contract-1 columns (so permuting a raw column permutes what depends on it).
DERIVED_FROM: dict[str, tuple[str, ...]] = {
    "attention_flops_share": ("attention_flops_per_token", "flops_per_token"),
    "flops_per_byte": ("peak_tflops", "mem_bandwidth_tbps"),
}


@dataclass(frozen=True)
class FeatureSpec:
    """Which contract-1 columns (or derived ones) a model uses, and how each is treated."""

    log_numeric: tuple[str, ...] = ()
    numeric: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> FeatureSpec:
        return cls(
            log_numeric=tuple(cfg.get("log_numeric", ())),
            numeric=tuple(cfg.get("numeric", ())),
            categorical=tuple(cfg.get("categorical", ())),
        )

    def to_dict(self) -> dict[str, list[str]]:
        return {"log_numeric": list(self.log_numeric), "numeric": list(self.numeric),
                "categorical": list(self.categorical)}

    @property
    def model_columns(self) -> tuple[str, ...]:
        """Columns the estimator sees after derivation."""
        return self.log_numeric + self.numeric + self.categorical

    @property
    def input_columns(self) -> tuple[str, ...]:
        """Contract-1 columns a caller must pass (derived features replaced by what they derive from)."""
        columns: list[str] = []
        for name in self.model_columns:
            for source in DERIVED_FROM.get(name, (name,)):
                if source not in columns:
                    columns.append(source)
        return tuple(columns)


@dataclass(frozen=True)
class DesignFrame:
    """Picklable first pipeline step: select, type and derive the feature columns of a pandas frame."""

    spec: FeatureSpec

    def __call__(self, frame: pd.DataFrame) -> pd.DataFrame:
        return design_frame(frame, self.spec)


def _as_category(values: pd.Series) -> pd.Series:
    """Categories as lower-case text (booleans become "true"/"false"); missing stays missing."""
    text = values.astype(object)
    missing = text.isna()
    text = text.where(missing, text.astype(str).str.strip().str.lower())
    return text.where(~missing, np.nan).astype(object)


def design_frame(frame: pd.DataFrame | pl.DataFrame, spec: FeatureSpec) -> pd.DataFrame:
    """The estimator's input: configured columns only, numbers as float64 (NaN when missing or absent),
    categories as lower-case strings, derived ratios computed here and nowhere else."""
    if isinstance(frame, pl.DataFrame):
        frame = frame.to_pandas()
    out = pd.DataFrame(index=frame.index)

    def number(name: str) -> pd.Series:
        if name not in frame.columns:
            return pd.Series(np.nan, index=frame.index, dtype="float64")
        return pd.to_numeric(frame[name], errors="coerce").astype("float64")

    for name in spec.log_numeric + spec.numeric:
        if name == "attention_flops_share":
            out[name] = number("attention_flops_per_token") / number("flops_per_token")
        elif name == "flops_per_byte":
            out[name] = number("peak_tflops") / number("mem_bandwidth_tbps")
        else:
            out[name] = number(name)
    for name in spec.log_numeric:
        # log of a non-positive value is undefined: treat it as missing (imputed), never as -inf
        values = out[name].where(out[name] > 0)
        out[name] = np.log(values)
    for name in spec.categorical:
        out[name] = _as_category(frame[name]) if name in frame.columns else pd.Series(
            np.nan, index=frame.index, dtype=object)
    return out.replace([np.inf, -np.inf], np.nan)


def preprocessor(spec: FeatureSpec) -> ColumnTransformer:
    """Impute, scale numbers, one-hot categories (unknown levels at prediction time encode as all zeros)."""
    numbers = list(spec.log_numeric + spec.numeric)
    categories = list(spec.categorical)
    transformers: list[tuple[str, Any, list[str]]] = []
    if numbers:
        transformers.append((
            "numeric",
            Pipeline([
                # keep_empty_features: an all-missing column (no telemetry has it yet) stays, as a constant
                ("impute", SimpleImputer(strategy="median", keep_empty_features=True)),
                ("scale", StandardScaler()),
            ]),
            numbers,
        ))
    if categories:
        transformers.append((
            "categorical",
            Pipeline([
                ("impute", SimpleImputer(strategy="constant", fill_value="missing", keep_empty_features=True)),
                ("onehot", OneHotEncoder(handle_unknown="ignore", sparse_output=False)),
            ]),
            categories,
        ))
    return ColumnTransformer(transformers, remainder="drop", verbose_feature_names_out=False)


def design_step(spec: FeatureSpec) -> FunctionTransformer:
    return FunctionTransformer(DesignFrame(spec), validate=False)


def log_mfu(tokens_per_sec_per_gpu: np.ndarray | pd.Series, physics_bound: np.ndarray | pd.Series) -> np.ndarray:
    """The learning target: log(tokens/s/GPU ÷ tokens/s/GPU at MFU 1) = log MFU."""
    values: np.ndarray = np.log(
        np.asarray(tokens_per_sec_per_gpu, dtype="float64") / np.asarray(physics_bound, dtype="float64"))
    return values


def tokens_per_sec(log_mfu_values: np.ndarray, physics_bound: np.ndarray | pd.Series) -> np.ndarray:
    """Back from log MFU to tokens/s per GPU."""
    bound = np.asarray(physics_bound, dtype="float64")
    values: np.ndarray = np.exp(np.asarray(log_mfu_values, dtype="float64")) * bound
    return values
