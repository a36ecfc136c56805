"""What the training data covered, per model and regime, for the extrapolation flags and the intervals: read by
training (its calibration groups, held-out flags) and carried by the registered model (tasks.model.serving)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tasks.model.config import Intervals
from tasks.model.design import model_keys, moe_rows
from tasks.model.structured import LOW_PRECISION, expert_parallel_leaves_domain

# config/models.toml [intervals] defaults (tasks/model/config.py, the one place they are written)
INTERVALS = Intervals()


def model_regimes(frame: pd.DataFrame) -> list[str]:
    """Per row, the regime an MoE model runs in, for the intervals: its model key, precision family (16-bit or
    fp8/fp4) and expert-parallel placement (inside or beyond the scale-up domain), e.g. "30.5/3.3|fp8/fp4|beyond";
    "" for a dense row."""
    keys = model_keys(frame)
    leaves = expert_parallel_leaves_domain(frame)
    moe = moe_rows(frame)
    precision = frame["precision"] if "precision" in frame.columns else pd.Series(None, index=frame.index)
    family = ["fp8/fp4" if p in LOW_PRECISION else "16-bit" for p in precision]
    return [f"{k}|{f}|{'beyond' if out else 'inside'}" if m else ""
            for k, f, out, m in zip(keys, family, leaves, moe, strict=True)]


@dataclass(frozen=True)
class TrainingCoverage:
    """What the training data covered, to flag (and widen the interval of) rows outside it."""

    precisions: tuple[str, ...] = ()      # precision families with telemetry
    frameworks: tuple[str, ...] = ()      # framework texts with telemetry (lower-cased)
    max_num_gpus: float = float("inf")    # the largest cluster seen
    moe_rows: int = 0                     # MoE runs in the training data
    min_moe_rows: int = INTERVALS.min_moe_rows     # fewer than this: MoE rows are flagged
    widen_factor: float = INTERVALS.widen_factor   # interval offsets x this for cluster-size / MoE extrapolation
    unseen_precision_low: float = 0.0     # log-space offsets calibrated on leave-one-precision-family-out
    unseen_precision_high: float = 0.0
    known_low: float | None = None        # offsets for a row inside the training data (GPU, family and
    known_high: float | None = None       # framework seen): held-out configurations of seen sources
    models: tuple[str, ...] = ()          # model_key of every training row (empty in versions trained before)
    # model_regimes of every MoE training row (empty in versions trained before: no row is flagged
    # "unseen_model_regime", so they predict as they did)
    regimes: tuple[str, ...] = ()
    # framework texts of the MoE training rows (empty in versions trained before: no row is flagged
    # "moe_new_framework", so they predict as they did)
    moe_frameworks: tuple[str, ...] = ()

    @classmethod
    def of_training(cls, frame: pd.DataFrame, min_moe_rows: int = INTERVALS.min_moe_rows,
                    widen_factor: float = INTERVALS.widen_factor) -> TrainingCoverage:
        """What training rows `frame` cover (the interval offsets are left at their defaults)."""

        def frameworks(rows: pd.DataFrame) -> tuple[str, ...]:
            return tuple(sorted(rows["framework"].dropna().astype(str).str.lower().unique()))

        moe = moe_rows(frame)
        return cls(precisions=tuple(sorted(frame["precision"].dropna().astype(str).unique())),
                   frameworks=frameworks(frame),
                   max_num_gpus=float(pd.to_numeric(frame["num_gpus"], errors="coerce").max()),
                   moe_rows=int(moe.sum()), min_moe_rows=min_moe_rows, widen_factor=widen_factor,
                   models=tuple(sorted(set(model_keys(frame)))),
                   regimes=tuple(sorted(set(model_regimes(frame)) - {""})), moe_frameworks=frameworks(frame[moe]))

    def flags(self, frame: pd.DataFrame, seen_gpu: np.ndarray) -> list[str]:
        """Per row: "unseen_gpu", "unseen_precision_family", "unseen_framework", "beyond_largest_cluster",
        "moe_little_data", "moe" (every MoE row), "moe_shape_estimated", "unseen_model" (an MoE model, by its total
        and active parameters, that no training row has), "ep_beyond_domain" (an MoE run whose expert-parallel group
        is larger than its scale-up domain), "unseen_model_regime" (an MoE model trained on, but never in the row's
        precision family and expert-parallel placement), "moe_new_framework" (an MoE run of a framework no MoE
        training row ran), comma-separated ("" when none)."""
        out = []
        keys = model_keys(frame)
        leaves = expert_parallel_leaves_domain(frame)
        models = set(getattr(self, "models", ()))
        regimes = set(getattr(self, "regimes", ()))
        moe_frameworks = set(getattr(self, "moe_frameworks", ()))
        row_regimes = model_regimes(frame) if regimes else [""] * len(frame)
        moe = moe_rows(frame)
        for i, (_, row) in enumerate(frame.iterrows()):
            flags = []
            if not seen_gpu[i]:
                flags.append("unseen_gpu")
            if self.precisions and row.get("precision") not in self.precisions:
                flags.append("unseen_precision_family")
            framework = row.get("framework")
            if _unknown_text(framework, self.frameworks):
                flags.append("unseen_framework")
            gpus = _number(row.get("num_gpus"))
            if np.isfinite(gpus) and gpus > self.max_num_gpus:
                flags.append("beyond_largest_cluster")
            if moe[i]:
                flags += self._moe_flags(row, keys[i] in models if models else None, row_regimes[i], regimes,
                                         bool(leaves[i]), moe_frameworks)
            out.append(",".join(flags))
        return out

    def _moe_flags(self, row: pd.Series, model_seen: bool | None, regime: str, regimes: set[str],
                   leaves_domain: bool, moe_frameworks: set[str]) -> list[str]:
        """The flags of an MoE row, in their order (`model_seen` None: the version knows no models)."""
        flags = ["moe_little_data"] if self.moe_rows < self.min_moe_rows else []
        flags.append("moe")
        if row.get("moe_shape_source") == "estimated":
            flags.append("moe_shape_estimated")
        if model_seen is False:
            flags.append("unseen_model")
        if leaves_domain:
            flags.append("ep_beyond_domain")
        if regimes and model_seen and regime not in regimes:
            flags.append("unseen_model_regime")
        if _unknown_text(row.get("framework"), moe_frameworks):
            flags.append("moe_new_framework")
        return flags


def _unknown_text(value: Any, known: set[str] | tuple[str, ...]) -> bool:
    """A text (compared lower-cased) that `known` does not have; never when nothing is known (older versions)."""
    return bool(known) and (not isinstance(value, str) or value.lower() not in known)


def _number(value: Any) -> float:
    """A cell as a number (NaN when it is none or does not parse), as pandas reads it."""
    return float(pd.to_numeric(value, errors="coerce"))
