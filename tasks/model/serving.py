"""The registered model: a fitted pipeline plus what must travel with it (target limits, interval offsets,
the GPUs it was trained on), wrapped as an MLflow pyfunc so `models:/token-efficiency@champion` returns
tokens/s per GPU with an 80% interval."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import mlflow.pyfunc
import numpy as np
import pandas as pd
import polars as pl
from mlflow.models.signature import ModelSignature
from mlflow.types import ColSpec, Schema
from sklearn.pipeline import Pipeline

from tasks.model.candidates import CandidateSpec
from tasks.model.design import PHYSICS_BOUND
from tasks.model.evaluation import TargetSpec
from tasks.model.intervals import IntervalOffsets

PREDICTION_COLUMNS = ("predicted_tokens_per_sec_per_gpu", "predicted_low", "predicted_high")


@dataclass
class TokenEfficiencyModel:
    pipeline: Pipeline                 # feature rows -> log MFU
    spec: CandidateSpec
    target: TargetSpec
    intervals: IntervalOffsets
    seen_gpus: tuple[str, ...]         # GPUs with telemetry in the training data

    @property
    def string_columns(self) -> tuple[str, ...]:
        return ("gpu", *self.spec.uses_features.categorical)

    @property
    def input_columns(self) -> tuple[str, ...]:
        """What a caller passes: the feature columns the pipeline reads, the GPU id and the physics bound."""
        columns = ["gpu", PHYSICS_BOUND]
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
                values = frame[name] if name in frame.columns else np.nan
                out[name] = pd.to_numeric(pd.Series(values, index=frame.index), errors="coerce").astype("float64")
        return out

    def signature(self) -> ModelSignature:
        inputs = Schema([
            ColSpec("string" if name in self.string_columns else "double", name,
                    required=name in ("gpu", PHYSICS_BOUND))
            for name in self.input_columns
        ])
        outputs = Schema([ColSpec("double", name) for name in PREDICTION_COLUMNS])
        return ModelSignature(inputs=inputs, outputs=outputs)

    def predict(self, features: pd.DataFrame | pl.DataFrame) -> pd.DataFrame:
        """tokens/s per GPU and the interval; NaN where the physics bound is unknown (no peak, no spec)."""
        frame = self.model_input(features)
        bound = frame[PHYSICS_BOUND].to_numpy(dtype="float64")
        predicted = self.target.clip(self.pipeline.predict(frame))
        seen = frame["gpu"].isin(self.seen_gpus).to_numpy()
        low = np.where(seen, self.intervals.seen_low, self.intervals.unseen_low)
        high = np.where(seen, self.intervals.seen_high, self.intervals.unseen_high)
        valid = np.isfinite(bound) & (bound > 0)
        bound = np.where(valid, bound, np.nan)
        return pd.DataFrame({
            "predicted_tokens_per_sec_per_gpu": np.exp(predicted) * bound,
            "predicted_low": np.exp(self.target.clip(predicted + low)) * bound,
            "predicted_high": np.exp(self.target.clip(predicted + high)) * bound,
        }, index=frame.index)


with warnings.catch_warnings():
    # MLflow suggests type hints on predict; the explicit signature (TokenEfficiencyModel.signature) is the schema
    warnings.simplefilter("ignore", UserWarning)

    class TokenEfficiencyPyfunc(mlflow.pyfunc.PythonModel):
        """MLflow wrapper. Serialized with cloudpickle; loading needs the `gpucost` package (tasks.model)."""

        def __init__(self, model: TokenEfficiencyModel) -> None:
            self.model = model

        def predict(self, context, model_input, params=None):  # untyped on purpose: the signature is the schema
            return self.model.predict(model_input)
