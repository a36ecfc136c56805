"""Pure pieces of the model, checked against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tasks.model.candidates import CandidateSpec, build_pipeline
from tasks.model.design import FeatureSpec, design_frame, log_mfu, tokens_per_sec
from tasks.model.evaluation import TargetSpec, grouped_folds, regression_metrics
from tasks.model.intervals import IntervalOffsets, conformal_bounds, cross_fold_coverage, symmetric_bound


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


def test_conformal_bounds_use_finite_sample_ranks() -> None:
    residuals = np.arange(1.0, 20.0)  # 1..19, n = 19, level 0.8
    # upper rank ceil(20 × 0.9) = 18 -> 18.0; lower rank floor(20 × 0.1) = 2 -> 2.0
    assert conformal_bounds(residuals, 0.8) == (2.0, 18.0)
    # |r| rank ceil(20 × 0.8) = 16 -> 16.0
    assert symmetric_bound(residuals, 0.8) == 16.0


def test_unseen_gpu_interval_is_never_narrower_than_seen_and_symmetric() -> None:
    seen = np.arange(-9.0, 10.0) / 100        # -0.09..0.09, n = 19: bounds rank 2 and 18 -> -0.08, 0.08
    unseen = np.arange(-30.0, -11.0) / 100    # -0.30..-0.12 (a GPU that came out slower than predicted)
    # unseen signed: rank 2 -> -0.29, rank 18 -> -0.13; |r| rank 16 of 0.12..0.30 -> 0.27
    # -> low min(-0.29, -0.27, seen -0.08) = -0.29; high max(-0.13, +0.27, seen 0.08) = 0.27
    offsets = IntervalOffsets.calibrate(seen, unseen, 0.8)
    assert (offsets.seen_low, offsets.seen_high) == pytest.approx((-0.08, 0.08))
    assert (offsets.unseen_low, offsets.unseen_high) == pytest.approx((-0.29, 0.27))


def test_cross_fold_coverage_calibrates_on_the_other_folds() -> None:
    # fold 0: residuals 0..9 (n=10), fold 1: residuals 100..109. Calibrated on fold 1 alone, bounds are
    # ranks floor(11×0.1)=1 and ceil(11×0.9)=10 -> [100, 109]: none of fold 0 inside; and vice versa.
    residuals = np.concatenate([np.arange(10.0), np.arange(100.0, 110.0)])
    folds = np.array([0] * 10 + [1] * 10)
    assert cross_fold_coverage(residuals, folds, 0.8) == 0.0
    # the same residuals in one interleaved pattern: fold 0 = even ranks, fold 1 = odd ranks of 0..19
    residuals = np.arange(20.0)
    folds = np.arange(20) % 2
    # fold 0 calibrated on 1,3,..,19 -> [1, 19]: 2..18 inside = 9 of 10; fold 1 on 0,2,..,18 -> [0, 18]:
    # 1..17 inside = 9 of 10 -> 18 / 20
    assert cross_fold_coverage(residuals, folds, 0.8) == pytest.approx(0.9)


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
