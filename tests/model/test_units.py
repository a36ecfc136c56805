"""Pure pieces of the model, checked against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tasks.model.candidates import CandidateSpec, build_pipeline
from tasks.model.design import FeatureSpec, design_frame, log_mfu, tokens_per_sec
from tasks.model.evaluation import TargetSpec, grouped_folds, regression_metrics
from tasks.model.intervals import CalibrationPool, NormalisedConformal, normalised_fold_coverage


def test_physics_baseline_is_median_mfu_per_precision_with_global_fallback() -> None:
    # Three training rows, physics bound 1000 tokens/s/GPU each:
    #   bf16 at 400 tokens/s (MFU 0.4), bf16 at 500 (MFU 0.5), fp8 at 300 (MFU 0.3).
    train = pd.DataFrame({"precision": ["bf16", "bf16", "fp8"],
                          "tokens_per_sec_per_gpu": [400.0, 500.0, 300.0],
                          "physics_bound_tokens_per_sec_per_gpu": [1000.0, 1000.0, 1000.0]})
    y = log_mfu(train["tokens_per_sec_per_gpu"], train["physics_bound_tokens_per_sec_per_gpu"])
    model = build_pipeline(CandidateSpec(name="physics_baseline", kind="constant_mfu")).fit(train, y)

    # bf16: median of log 0.4 and log 0.5 = (log 0.4 + log 0.5) / 2 = log sqrt(0.2) -> MFU 0.44721
    # fp8: log 0.3; fp16 (not in training): global median of {log .3, log .4, log .5} = log 0.4
    # at a physics bound of 2000 tokens/s/GPU: 894.43, 600, 800 tokens/s/GPU
    rows = pd.DataFrame({"precision": ["bf16", "fp8", "fp16"]})
    predicted = tokens_per_sec(model.predict(rows), np.array([2000.0, 2000.0, 2000.0]))
    assert predicted == pytest.approx([2000 * math.sqrt(0.2), 600.0, 800.0], rel=1e-12)


def test_regression_metrics_by_hand() -> None:
    # actual 100, 200; predicted 110, 180: errors +10, -20
    # MSE (100 + 400) / 2 = 250; RMSE sqrt(250); MAE 15; APE 0.10 and 0.10 -> median 0.10
    # R² = 1 - (100 + 400) / ((100-150)² + (200-150)²) = 1 - 500 / 5000 = 0.9
    metrics = regression_metrics(np.array([100.0, 200.0]), np.array([110.0, 180.0]))
    assert metrics == pytest.approx({"mse": 250.0, "rmse": math.sqrt(250.0), "mae": 15.0, "r2": 0.9,
                                     "median_ape": 0.1})


SETTINGS = {"min_flag_rows": 2, "default_widening": 1.5, "residual_floor": 0.01}


def test_normalised_conformal_uses_the_finite_sample_rank() -> None:
    # 19 rows inside the training data, |residual| 1..19: the scale is one constant s (the geometric mean), so
    # the scores are r / s and q = the ceil(20 x 0.8) = 16th smallest = 16 / s: half-width q x s = 16
    residuals = np.arange(1.0, 20.0) * np.where(np.arange(19) % 2, 1.0, -1.0)   # signs do not matter
    conformal = NormalisedConformal.calibrate(residuals, [""] * 19, 0.8, **SETTINGS)
    assert conformal.half_width([""])[0] == pytest.approx(16.0)
    assert conformal.calibration_rows == 19


def test_normalised_conformal_widens_by_flag() -> None:
    # 4 rows inside the training data with |r| 0.1, 4 unseen-GPU rows with |r| 0.3: least squares on log |r|
    # gives b0 = log 0.1 and b_gpu = log 3 (the two group means), every score 1, q = 1. unseen_framework is on
    # 0 rows (< min_flag_rows 2): it takes log 1.5. A row with both flags: 0.1 x 3 x 1.5 = 0.45.
    residuals = np.array([0.1, -0.1, 0.1, -0.1, 0.3, -0.3, 0.3, -0.3])
    flags = [""] * 4 + ["unseen_gpu"] * 4
    conformal = NormalisedConformal.calibrate(residuals, flags, 0.8, **SETTINGS)
    assert conformal.quantile == pytest.approx(1.0)
    assert conformal.half_width(["", "unseen_gpu", "unseen_gpu,unseen_framework"]) == pytest.approx(
        [0.1, 0.3, 0.45])
    assert conformal.widening()["unseen_gpu"] == pytest.approx(3.0)
    assert conformal.widening()["unseen_precision_family"] == pytest.approx(1.5)
    # a flag whose rows are EASIER than the rest never narrows the interval (b >= 0): unseen-GPU |r| 0.05
    easier = NormalisedConformal.calibrate(np.array([0.1] * 4 + [0.05] * 4), flags, 0.8, **SETTINGS)
    assert easier.widening()["unseen_gpu"] == pytest.approx(1.0)


def test_normalised_coverage_calibrates_each_fold_without_its_rows() -> None:
    # 20 rows inside the training data, |residual| of row i = i + 1, fold = i mod 2 (one grouping = the pool).
    # Fold 0 (1, 3, .., 19) against the 10 residuals 2, 4, .., 20: q x s = the ceil(11 x 0.8) = 9th smallest = 18
    # -> 1..17 inside: 9 of 10. Fold 1 (2, 4, .., 20) against 1, 3, .., 19: 9th smallest 17 -> 2..16: 8 of 10.
    residuals = np.arange(1.0, 21.0)
    rows = np.arange(20)
    flags = [""] * 20
    pool = CalibrationPool.concat([(residuals, rows, flags)])
    pooled, per_fold = normalised_fold_coverage(pool, residuals, flags, rows % 2, 0.8, **SETTINGS)
    assert per_fold == pytest.approx({0: 0.9, 1: 0.8})
    assert pooled == pytest.approx(17 / 20)


def test_grouped_folds_hold_out_whole_groups() -> None:
    groups = np.array(["A100", "H100", "A100", "B200"])
    folds = grouped_folds(groups, max_folds=10)
    assert sorted(f.held_out for f in folds) == ["A100", "B200", "H100"]
    a100 = next(f for f in folds if f.held_out == "A100")
    assert list(a100.test) == [0, 2] and list(a100.train) == [1, 3]
    # more groups than max_folds: GroupKFold with 2 folds, each group still on one side only
    folds = grouped_folds(groups, max_folds=2)
    assert len(folds) == 2
    for fold in folds:
        assert not set(groups[fold.test]) & set(groups[fold.train])


def test_design_frame_types_derives_and_tolerates_missing_columns() -> None:
    spec = FeatureSpec(log_numeric=("params_b", "flops_per_byte", "learning_rate"),
                       numeric=("attention_flops_share",), categorical=("is_moe", "optimizer"))
    frame = pd.DataFrame({"params_b": [7.0, 0.0], "peak_tflops": [989.0, 312.0], "mem_bandwidth_tbps": [3.35, 2.0],
                          "attention_flops_per_token": [1e9, 0.0], "flops_per_token": [4e10, 1e10],
                          "is_moe": [True, None]})
    out = design_frame(frame, spec)
    # log 7; params_b 0 is not loggable -> missing; flops_per_byte log(989/3.35), log(312/2) = log 156
    assert out["params_b"].iloc[0] == pytest.approx(math.log(7.0)) and math.isnan(out["params_b"].iloc[1])
    assert out["flops_per_byte"].tolist() == pytest.approx([math.log(989 / 3.35), math.log(156.0)])
    assert out["attention_flops_share"].tolist() == pytest.approx([0.025, 0.0])  # 1e9 / 4e10, 0 / 1e10
    assert out["learning_rate"].isna().all()  # absent from the frame: missing, imputed later
    assert out["is_moe"].iloc[0] == "true" and pd.isna(out["is_moe"].iloc[1])
    assert out["optimizer"].isna().all()


def test_target_clip_keeps_mfu_physical() -> None:
    target = TargetSpec(min_mfu=0.01, max_mfu=1.0)
    # log MFU 0.5 (MFU 1.65) -> clipped to log 1 = 0; log 0.001 -> log 0.01
    assert target.clip(np.array([0.5, math.log(0.001)])).tolist() == pytest.approx([0.0, math.log(0.01)])
