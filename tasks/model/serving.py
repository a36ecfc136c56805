"""The registered model: a fitted pipeline plus what must travel with it (target limits, interval offsets,
the GPUs it was trained on, the feature engineering and its reference files), wrapped as an MLflow pyfunc so
`models:/token-efficiency@champion` takes telemetry-contract rows and returns tokens/s per GPU with an 80%
interval."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import polars as pl
from mlflow.models.signature import ModelSignature
from mlflow.pyfunc.model import PythonModel, PythonModelContext
from mlflow.types import ColSpec, Schema
from mlflow.types.schema import AnyType
from sklearn.pipeline import Pipeline

from tasks.model.candidates import CandidateSpec
from tasks.model.contract_rows import (
    CONTRACT_INPUT_COLUMNS,
    PREDICTION_REQUIRED_COLUMNS,
    REFERENCE_FILES,
    ContractFeatures,
    contract_frame,
    no_prediction_reason,
)

# (versions registered before pickled their coverage as tasks.model.serving.TrainingCoverage: still found here)
from tasks.model.coverage import TrainingCoverage
from tasks.model.coverage import model_regimes as model_regimes
from tasks.model.design import PHYSICS_BOUND
from tasks.model.design import model_keys as model_keys
from tasks.model.evaluation import TargetSpec
from tasks.model.intervals import IntervalOffsets, NormalisedConformal

PREDICTION_COLUMNS = ("predicted_tokens_per_sec_per_gpu", "predicted_low", "predicted_high")
EXTRAPOLATION = "extrapolation"   # which of the flags below applied to a row ("" = inside the training data)


@dataclass
class TokenEfficiencyModel:
    pipeline: Pipeline                 # feature rows -> log MFU
    spec: CandidateSpec
    target: TargetSpec
    intervals: IntervalOffsets
    seen_gpus: tuple[str, ...]         # GPUs with telemetry in the training data
    coverage: TrainingCoverage | None = None   # None in versions trained before extrapolation flags
    conformal: NormalisedConformal | None = None   # None in versions trained before normalised intervals

    @property
    def string_columns(self) -> tuple[str, ...]:
        return ("gpu", "precision", "framework", "moe_shape_source", "parallelism",
                *self.spec.uses_features.categorical)

    @property
    def input_columns(self) -> tuple[str, ...]:
        """What a caller passes: the feature columns the pipeline reads, the GPU id and the physics bound
        (and what the extrapolation flags read)."""
        columns = ["gpu", PHYSICS_BOUND, "precision", "framework", "num_gpus", "params_b", "active_params_b",
                   "moe_shape_source", "parallelism", "scale_up_domain_gpus", "moe_experts"]
        for name in self.spec.uses_features.input_columns:
            if name not in columns:
                columns.append(name)
        return tuple(columns)

    def model_input(self, features: pd.DataFrame | pl.DataFrame) -> pd.DataFrame:
        """Rows shaped like build_features output -> exactly the signature's columns and types
        (numbers float64, categories text; absent optional columns are missing values)."""
        frame = features.to_pandas() if isinstance(features, pl.DataFrame) else features
        out = pd.DataFrame(index=frame.index)
        for name in self.input_columns:
            if name in self.string_columns:
                values = frame[name] if name in frame.columns else pd.Series(None, index=frame.index, dtype=object)
                out[name] = pd.Series([None if pd.isna(v) else str(v) for v in values], index=frame.index,
                                      dtype=object)
            else:
                numbers = frame[name] if name in frame.columns else np.nan
                out[name] = pd.to_numeric(pd.Series(numbers, index=frame.index), errors="coerce").astype("float64")
        return out

    def predict(self, features: pd.DataFrame | pl.DataFrame) -> pd.DataFrame:
        """tokens/s per GPU and the interval; NaN where the physics bound is unknown (no peak, no spec)."""
        frame = self.model_input(features)
        bound = frame[PHYSICS_BOUND].to_numpy(dtype="float64")
        predicted = self.target.clip(self.pipeline.predict(frame))
        seen = frame["gpu"].isin(self.seen_gpus).to_numpy()
        low = np.where(seen, self.intervals.seen_low, self.intervals.unseen_low)
        high = np.where(seen, self.intervals.seen_high, self.intervals.unseen_high)
        coverage = getattr(self, "coverage", None)
        flags = coverage.flags(frame, seen) if coverage is not None else [
            "" if s else "unseen_gpu" for s in seen]
        conformal = getattr(self, "conformal", None)
        if conformal is not None:
            # normalised conformal: +-q x scale, the scale wider for each extrapolation the row carries
            half = conformal.half_width(flags)
            low, high = -half, half
        elif coverage is not None:
            # (versions trained before normalised intervals) Mondrian: each extrapolation takes the widest
            # calibrated offsets that apply to it; a row inside the training data the in-distribution ones
            if coverage.known_low is not None and coverage.known_high is not None:
                seen_framework = np.array(["unseen_framework" not in f for f in flags])
                low = np.where(seen & seen_framework, coverage.known_low, low)
                high = np.where(seen & seen_framework, coverage.known_high, high)
            family = np.array(["unseen_precision_family" in f for f in flags])
            low = np.where(family, np.minimum(low, coverage.unseen_precision_low), low)
            high = np.where(family, np.maximum(high, coverage.unseen_precision_high), high)
            wide = np.array([("beyond_largest_cluster" in f) or ("moe_little_data" in f) for f in flags])
            low = np.where(wide, low * coverage.widen_factor, low)
            high = np.where(wide, high * coverage.widen_factor, high)
        valid = np.isfinite(bound) & (bound > 0)
        bound = np.where(valid, bound, np.nan)
        return pd.DataFrame({
            "predicted_tokens_per_sec_per_gpu": np.exp(predicted) * bound,
            "predicted_low": np.exp(self.target.clip(predicted + low)) * bound,
            "predicted_high": np.exp(self.target.clip(predicted + high)) * bound,
            EXTRAPOLATION: flags,
        }, index=frame.index)


UNSCORED_REASON = "unscored_reason"   # why a row has no prediction (None when it has one)


def assumption_notes(features: pl.DataFrame, active_given: list[bool] | None = None) -> list[str]:
    """Per feature row, what the prediction assumed instead of the row: "active_params_from_shape" (an MoE model,
    by its shape, whose row gave no active_params_b: its active parameters from the shape's experts, top-k and
    expert FFN), "machine_defaulted[scale_up_domain_gpus=8; scale_out_gbps_per_gpu=400]" (the GPU system's defaults
    of data/reference/gpu_specs.csv, for the columns the row did not give). (An MoE shape estimated from the
    parameter counts is an extrapolation flag, "moe_shape_estimated", which widens the interval.)"""
    notes = []
    given = active_given if active_given is not None else [True] * features.height
    for row, active in zip(features.iter_rows(named=True), given, strict=True):
        parts = []
        if not active and row.get("is_moe"):
            parts.append("active_params_from_shape")
        defaulted = [f"{c}={row.get(c) if row.get(c) is not None else 'unknown'}"
                     for c, flag in (("scale_up_domain_gpus", "scale_up_defaulted"),
                                     ("scale_out_gbps_per_gpu", "scale_out_defaulted"))
                     if row.get(flag)]
        if defaulted:
            parts.append("machine_defaulted[" + "; ".join(defaulted).replace(".0;", ";").removesuffix(".0") + "]")
        notes.append(",".join(parts))
    return notes
MODEL_OUTPUT_COLUMNS = (*PREDICTION_COLUMNS, EXTRAPOLATION, UNSCORED_REASON)  # what the pyfunc returns


def score_contract_rows(model: TokenEfficiencyModel, features: ContractFeatures,
                        rows: pd.DataFrame | pl.DataFrame) -> pd.DataFrame:
    """Telemetry-contract rows -> MODEL_OUTPUT_COLUMNS, one row per input row (same index): tokens/s per GPU with
    its interval, the extrapolation flags, and for a row that cannot be scored NaN and the reason."""
    frame = contract_frame(rows)
    index = rows.index if isinstance(rows, pd.DataFrame) else pd.RangeIndex(frame.height)
    engineered, reasons = features.build(frame)
    scorable = [r is None for r in reasons]
    out = pd.DataFrame({name: np.full(frame.height, np.nan) for name in PREDICTION_COLUMNS})
    out[EXTRAPOLATION] = pd.Series([None] * frame.height, dtype=object)
    if any(scorable):
        chosen = engineered.filter(pl.Series(scorable, dtype=pl.Boolean))
        # absurd but readable values (a 1e300 network, a zero-width shape) may overflow on the way: the row then
        # gets no prediction and says why (below), instead of a floating-point warning or error
        with np.errstate(all="ignore"):
            predicted = model.predict(model.model_input(chosen))
        at = np.flatnonzero(scorable)
        for name in PREDICTION_COLUMNS:
            out.loc[at, name] = predicted[name].to_numpy(dtype="float64")
        # active parameters the row gives below its total (an MoE row's own figure; else the shape's, if MoE)
        active, total = (pd.to_numeric(pd.Series(frame[c].cast(pl.String).to_list() if c in frame.columns
                                                 else [None] * frame.height), errors="coerce")
                         for c in ("active_params_b", "params_b"))
        given = (active < total).tolist()
        notes = assumption_notes(chosen, [g for g, ok in zip(given, scorable, strict=True) if ok])
        out.loc[at, EXTRAPOLATION] = [",".join(x for x in (flag, note) if x) for flag, note in
                                      zip(predicted[EXTRAPOLATION].astype(str), notes, strict=True)]
        for position, value in zip(at, predicted["predicted_tokens_per_sec_per_gpu"].to_numpy(), strict=True):
            if not np.isfinite(value):
                reasons[position] = no_prediction_reason(engineered.row(int(position), named=True))
                out.loc[position, EXTRAPOLATION] = None
    out[UNSCORED_REASON] = pd.Series(reasons, dtype=object)
    out.index = index
    return out


def contract_signature() -> ModelSignature:
    """Input: the telemetry contract's columns without throughput, the prediction's required ones required.
    Typed `Any` on purpose: rows arrive as CSV text or with pandas' inferred types (an empty column is all-NaN
    float, `true` a boolean); the model's own normalisation parses every value and names the unreadable ones
    in `unscored_reason` per row, where a typed schema would reject the whole frame."""
    # AnyType's constructor is unannotated in mlflow
    inputs = Schema([ColSpec(AnyType(), name, required=name in PREDICTION_REQUIRED_COLUMNS)  # type: ignore[no-untyped-call]
                     for name in CONTRACT_INPUT_COLUMNS])
    outputs = Schema([*(ColSpec("double", name) for name in PREDICTION_COLUMNS),
                      ColSpec("string", EXTRAPOLATION, required=False),
                      ColSpec("string", UNSCORED_REASON, required=False)])
    return ModelSignature(inputs=inputs, outputs=outputs)


with warnings.catch_warnings():
    # MLflow suggests type hints on predict; the explicit signature (contract_signature) is the schema
    warnings.simplefilter("ignore", UserWarning)

    class TokenEfficiencyPyfunc(PythonModel):
        """MLflow wrapper: takes telemetry-contract rows and engineers their features itself, with the
        reference files logged as the model's artifacts (REFERENCE_FILES names) and the project code logged
        as its code_paths; serialized with cloudpickle."""

        def __init__(self, model: TokenEfficiencyModel, features: ContractFeatures | None = None) -> None:
            self.model = model
            self.features = features   # None in versions registered before contract rows (they took feature rows)

        def load_context(self, context: PythonModelContext) -> None:  # the reference files as this copy holds them
            features: ContractFeatures | None = getattr(self, "features", None)
            if features is not None:
                self.features = features.with_files({name: context.artifacts[name] for name in REFERENCE_FILES})

        # Unannotated on purpose: MLflow reads predict's type hints as an input schema; the signature is the schema
        def predict(self, context, model_input, params=None):  # type: ignore[no-untyped-def]
            features: ContractFeatures | None = getattr(self, "features", None)
            if features is None:
                return self.model.predict(model_input)
            return score_contract_rows(self.model, features, model_input)
