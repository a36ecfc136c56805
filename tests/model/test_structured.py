"""The structured step-time model: hand-worked parts, layout parsing, the selection rule, extrapolation flags."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tasks.config_files import load_config
from tasks.model.evaluation import GroupedCV, select_best
from tasks.model.serving import TokenEfficiencyModel, TrainingCoverage
from tasks.model.structured import StructuredConfig, compute_terms, framework_ridge_weights, step_time_parts

# One bundled row (published_benchmarks.csv, NeMo AutoModel): Llama-3-8B LoRA-less pretrain on 1 H100-SXM,
# here with the shape of Llama-3-8B (32 x 4096) and the H100-SXM specs of data/reference/gpu_specs.csv.
ROW = {"num_gpus": 1, "params_b": 8.03, "active_params_b": 8.03, "seq_len": 4096, "micro_batch": 2,
       "global_batch_tokens": 131072, "peak_tflops": 989.0, "peak_16bit_tflops": 989.0, "mem_bandwidth_tbps": 3.35,
       "intra_node_bw_gbps_unidir": 450.0, "n_layers": 32, "d_model": 4096, "precision": "bf16",
       "precision_recipe": "none", "workload": "pretrain", "activation_checkpointing": "none",
       "framework": "NeMo AutoModel", "parallelism": "FSDP 1 TP 1 PP 1 CP 1 VP 1 GA 16", "gpu": "H100-SXM",
       # data/reference/gpu_matmul_ceilings.csv: H100 SXM MAMF 794.5 of 989 (bf16), 1402.6 of 1979 (fp8)
       "matmul_ceiling_16bit": 794.5 / 989, "matmul_ceiling_lowp": 1402.6 / 1979}
PHYSICS = load_config("models")["structured"]   # the fixed constants (config/models.toml [structured])
PARAMS = {"matmul_efficiency": 0.5, "lowp_matmul_ratio": 0.8, "lowp_expert_ratio": 0.8,
          "attention_efficiency": 0.5, "activation_bytes": 100.0,
          "quantisation_bytes": 50.0, "grouped_gemm_half_size": 1.0e6, "moe_permute_bytes": 16.0,
          "layer_overhead_us": 10.0, "expert_load_cv": 0.0, "tp_overlap": 0.5, "dp_overlap": 0.5, "a2a_overlap": 0.3,
          "power_clock_exponent": 1.0 / 3.0, "a2a_call_us": 100.0}


def test_step_time_of_one_row_by_hand() -> None:
    parts = step_time_parts(compute_terms(pd.DataFrame([ROW]), StructuredConfig.from_config(PHYSICS)), PARAMS)
    # linear: 2 x 8.03e9 x 3 passes = 4.818e10 FLOPs / (MAMF 794.5e12 x 0.5) = 1.21284e-4 s per token
    assert parts["linear"][0] == pytest.approx(4.818e10 / 397.25e12)
    # attention: 2 x 4096 x 4096 x 32 x 3 = 3.2212e9 FLOPs / (794.5e12 x 0.5) = 8.1089e-6 s
    assert parts["attention"][0] == pytest.approx(3.221225472e9 / 397.25e12)
    # memory: 100 B x 32 x 4096 = 13,107,200 B / 3.35e12 B/s = 3.9126e-6 s
    assert parts["memory"][0] == pytest.approx(13_107_200 / 3.35e12)
    # overhead: 10 us x 32 layers / (2 x 4096 tokens per micro-step) = 3.90625e-8 s
    assert parts["layer_overhead"][0] == pytest.approx(10e-6 * 32 / 8192)
    # optimizer: 16 B x 8.03e9 params / 3.35e12 B/s per step of 131,072 tokens = 2.926e-7 s per token
    assert parts["optimizer"][0] == pytest.approx(16 * 8.03e9 / 3.35e12 / 131072)
    # one GPU: no tensor-parallel, data-parallel or all-to-all traffic
    assert parts["tensor_parallel"][0] == parts["data_parallel"][0] == parts["all_to_all"][0] == 0.0
    total = sum(p[0] for p in parts.values())
    # 1.21284e-4 + 8.1089e-6 + 3.9126e-6 + 3.906e-8 + 2.926e-7 = 1.33637e-4 s: 7,483 tokens/s per GPU (before
    # the framework factor)
    assert 1 / total == pytest.approx(7_483, rel=1e-3)


def test_fp8_runs_only_the_linear_layers_at_the_fp8_peak() -> None:
    fp8 = dict(ROW, precision="fp8", precision_recipe="delayed", peak_tflops=1979.0)
    parts = step_time_parts(compute_terms(pd.DataFrame([ROW, fp8]), StructuredConfig.from_config(PHYSICS)), PARAMS)
    # linear: 4.818e10 / (fp8 MAMF 1402.6e12 x 0.5 x 0.8); attention unchanged (16-bit); memory + 50 B quantisation
    assert parts["linear"][1] == pytest.approx(4.818e10 / (1402.6e12 * 0.4))
    assert parts["attention"][1] == parts["attention"][0]
    assert parts["memory"][1] == pytest.approx(150 * 32 * 4096 / 3.35e12)


def test_a_power_limit_below_the_mamf_part_slows_only_the_matmuls() -> None:
    # the same row on H100-SXM at its 700 W limit, and on torchtitan's H100 capped at 500 W (gpu_specs tdp_w) whose
    # MAMF was measured on the 700 W SXM part (gpu_matmul_ceilings mamf_power_w); a 1,000 W limit above it
    full = dict(ROW, tdp_w=700.0, matmul_ceiling_power_w=700.0)
    capped = dict(full, tdp_w=500.0)
    above = dict(full, tdp_w=1000.0)
    terms = compute_terms(pd.DataFrame([full, capped, above, ROW]), StructuredConfig.from_config(PHYSICS))
    parts = step_time_parts(terms, PARAMS)
    # clock (500 / 700) ** (1/3) = 0.71429 ** 0.33333 = 0.89390: linear 4.818e10 / (794.5e12 x 0.5 x 0.89390)
    assert pytest.approx(0.89390, rel=1e-5) == (500 / 700) ** (1 / 3)
    assert parts["linear"][1] == pytest.approx(4.818e10 / (397.25e12 * 0.89390), rel=1e-5)
    assert parts["attention"][1] == pytest.approx(3.221225472e9 / (397.25e12 * 0.89390), rel=1e-5)
    # HBM traffic, overhead and optimizer do not scale with the clock
    for name in ("memory", "layer_overhead", "optimizer"):
        assert parts[name][1] == parts[name][0]
    # at or above the measured part's power, and without a power column: the MAMF as measured
    assert parts["linear"][0] == parts["linear"][2] == parts["linear"][3] == pytest.approx(4.818e10 / 397.25e12)


def test_a_missing_shape_is_estimated_from_the_parameter_count() -> None:
    row = dict(ROW, n_layers=None, d_model=None, micro_batch=None, framework=None, parallelism=None)
    terms = compute_terms(pd.DataFrame([row]), StructuredConfig.from_config(PHYSICS))
    # N = 12 L d^2 with d = 128 L: L = (8.03e9 / (12 x 128^2))^(1/3) = 34.4, d = 4,403
    layers = (8.03e9 / (12 * 128**2)) ** (1 / 3)
    assert terms.layer_width[0] == pytest.approx(layers * 128 * layers)
    assert bool(terms.shape_estimated[0])
    # no micro_batch: 8192 tokens per micro-step, 2 sequences of 4096; every part is still a finite time
    assert terms.overhead_units[0] == pytest.approx(layers / 8192)
    parts = step_time_parts(terms, PARAMS)
    assert all(np.isfinite(p[0]) and p[0] >= 0 for p in parts.values())


def _cv(median_ape: float) -> GroupedCV:
    return GroupedCV(grouping="g", folds=[], fold_metrics=[], oof_log_mfu=np.zeros(1), fold_of_row=np.zeros(1),
                     pooled={"median_ape": median_ape})


def test_a_framework_factor_is_shrunk_by_the_models_it_ran_not_its_runs() -> None:
    # rows' framework index (0: pooled, no factor) and model: framework 1 ran one model 8 times (a blog's A/B
    # configurations), framework 2 four models once each, framework 3 two models three times each
    index = np.array([1] * 8 + [2] * 4 + [3] * 6 + [0, 0])
    models = np.array(["671/37"] * 8 + ["8/8", "70/70", "405/405", "1/1"] + ["7/7"] * 3 + ["13/13"] * 3
                      + ["x", "y"], dtype=object)
    weights = framework_ridge_weights(index, models, 3, ridge=4.0)
    # sqrt(4 x runs / models): 8 / 1 -> sqrt(32) = 5.657; 4 / 4 -> sqrt(4) = 2; 6 / 2 -> sqrt(12) = 3.464
    assert weights == pytest.approx([math.sqrt(32), 2.0, math.sqrt(12)])
    # the penalty a run of the framework stands against is ridge / its models: 4 / 1, 4 / 4, 4 / 2 - the factor is
    # learned as if from one run per model, each with the ridge a lone run would have
    assert weights**2 / np.array([8, 4, 6]) == pytest.approx([4.0, 1.0, 2.0])


def test_a_candidate_worse_than_the_baseline_on_one_grouping_cannot_be_champion() -> None:
    baseline = {"gpu": _cv(0.20), "source_group": _cv(0.30)}
    better_everywhere = {"gpu": _cv(0.19), "source_group": _cv(0.29)}
    best_score_but_loses_on_gpu = {"gpu": _cv(0.21), "source_group": _cv(0.05)}
    results = [("baseline", baseline, 0.25), ("tree", best_score_but_loses_on_gpu, 0.13),
               ("structured", better_everywhere, 0.24)]
    winner, losses = select_best(results, "baseline")
    assert winner == "structured"
    assert losses == {"tree": ["gpu"]}
    # nothing eligible but the baseline: the baseline wins
    assert select_best(results[:2], "baseline")[0] == "baseline"


def test_extrapolation_flags() -> None:
    coverage = TrainingCoverage(precisions=("bf16", "fp8"), frameworks=("torchtitan",), max_num_gpus=512,
                                moe_rows=5, min_moe_rows=30)
    frame = pd.DataFrame([
        {"precision": "bf16", "framework": "torchtitan", "num_gpus": 8, "params_b": 8.0, "active_params_b": 8.0},
        {"precision": "fp4", "framework": "PyTorch", "num_gpus": 1024, "params_b": 235.0, "active_params_b": 22.0},
    ])
    flags = coverage.flags(frame, np.array([True, False]))
    assert flags[0] == ""
    # every MoE row also carries "moe" (its own interval quantile and widening)
    assert flags[1] == ("unseen_gpu,unseen_precision_family,unseen_framework,beyond_largest_cluster,moe_little_data,"
                        "moe")
    assert math.isinf(TrainingCoverage().max_num_gpus)


def test_each_extrapolation_widens_the_interval_by_its_factor() -> None:
    from tasks.model.candidates import CandidateSpec, build_pipeline
    from tasks.model.evaluation import TargetSpec
    from tasks.model.intervals import IntervalOffsets, NormalisedConformal

    spec = CandidateSpec(name="physics_baseline", kind="constant_mfu")
    train = pd.DataFrame({"precision": ["bf16", "bf16", "fp8"]})
    pipeline = build_pipeline(spec).fit(train, np.log([0.4, 0.4, 0.3]))
    intervals = IntervalOffsets(level=0.8, seen_low=-0.3, seen_high=0.2, unseen_low=-0.5, unseen_high=0.4)
    # half-width q x exp(b0 + b_flags): q 2, scale 0.05 inside; widenings GPU 2, family 3, framework 1.5,
    # cluster 1.2, MoE 1.1
    conformal = NormalisedConformal(level=0.8, log_scale=math.log(0.05),
                                    log_widening=tuple(math.log(f) for f in (2.0, 3.0, 1.5, 1.2, 1.1)),
                                    quantile=2.0, calibration_rows=100)
    coverage = TrainingCoverage(precisions=("bf16", "fp8"), frameworks=("torchtitan",), max_num_gpus=512,
                                moe_rows=100)
    model = TokenEfficiencyModel(pipeline=pipeline, spec=spec, target=TargetSpec(0.01, 1.0), intervals=intervals,
                                 seen_gpus=("H100-SXM",), coverage=coverage, conformal=conformal)
    base = {"gpu": "H100-SXM", "precision": "bf16", "framework": "torchtitan", "num_gpus": 8, "params_b": 8.0,
            "active_params_b": 8.0, "physics_bound_tokens_per_sec_per_gpu": 10_000.0}
    rows = pd.DataFrame([base, dict(base, framework="PyTorch"), dict(base, gpu="B200"),
                         dict(base, precision="fp4"), dict(base, num_gpus=1024),
                         dict(base, gpu="B200", framework="PyTorch")])
    out = model.predict(rows)
    log_width = np.log(out["predicted_high"] / out["predicted_low"]).round(9).tolist()
    # log(high / low) = 2 x half-width = 2 x 2 x 0.05 x factors: inside 0.2; framework 0.3; GPU 0.4; family 0.6;
    # cluster 0.24; GPU and framework together 0.2 x 2 x 1.5 = 0.6
    assert log_width == pytest.approx([0.2, 0.3, 0.4, 0.6, 0.24, 0.6])
    assert out["extrapolation"].tolist() == ["", "unseen_framework", "unseen_gpu", "unseen_precision_family",
                                             "beyond_largest_cluster", "unseen_gpu,unseen_framework"]
    # bf16 rows: exp(median log 0.4) x 10,000 = 4,000 tokens/s per GPU at the centre
    assert out["predicted_tokens_per_sec_per_gpu"][0] == pytest.approx(4000.0)


def test_residual_correction_applies_only_to_categories_it_was_learned_on(all_training_features) -> None:
    from tasks.model.candidates import StructuredPlusResidual
    from tasks.model.design import FeatureSpec
    from tasks.model.evaluation import prepare_training_data

    data = prepare_training_data(all_training_features)
    bf16 = (data.frame["precision"] == "bf16").to_numpy()
    features = FeatureSpec(log_numeric=("params_b", "seq_len"), categorical=("precision_recipe",))
    model = StructuredPlusResidual(physics=PHYSICS, residual_features=features, params={"max_iter": 20},
                                   shrink=0.5).fit(
        data.frame[bf16], data.log_mfu[bf16])
    # trained on bf16 runs only (recipe "none"): an fp8 run's recipe (delayed, rowwise, ...) was never seen, so
    # it gets the structured prediction unchanged; bf16 runs get structured + 0.5 x the correction
    structured = model.structured_.predict(data.frame)
    combined = model.predict(data.frame)
    assert np.array_equal(combined[~bf16], structured[~bf16])
    assert np.allclose(combined[bf16], structured[bf16] + 0.5 * model.correction_.predict(data.frame[bf16]))
    assert not np.allclose(combined[bf16], structured[bf16])


def test_held_out_rows_are_flagged_against_their_folds_training_rows() -> None:
    from tasks.model.config import Intervals
    from tasks.model.training import configuration_groups, extrapolation_flagger

    row = {"gpu": "H100-SXM", "precision": "bf16", "framework": "torchtitan", "num_gpus": 64, "params_b": 8.0,
           "active_params_b": 8.0, "source_group": "pytorch/torchtitan"}
    train = pd.DataFrame([row, dict(row, num_gpus=8)])
    test = pd.DataFrame([dict(row, gpu="A100-80GB", num_gpus=8),
                         dict(row, precision="fp8", framework="NeMo", num_gpus=128),
                         dict(row, params_b=109.0, active_params_b=17.0)])
    # the fold's training rows: H100-SXM, bf16, torchtitan, at most 64 GPUs, no MoE run (< 30), only the 8.0/8.0 model
    assert extrapolation_flagger(Intervals(min_moe_rows=30))(train, test) == [
        "unseen_gpu", "unseen_precision_family,unseen_framework,beyond_largest_cluster",
        "moe_little_data,moe,unseen_model"]
    # a configuration = source x model size (rounded to 0.1 B)
    assert configuration_groups(test).tolist() == ["pytorch/torchtitan|8.0"] * 2 + ["pytorch/torchtitan|109.0"]


def test_a_version_registered_before_a_prior_existed_still_predicts(all_training_features) -> None:
    """A stored version's config is the one it was trained with: a prior added to config/models.toml later (the
    low-precision expert ratio's) is missing from it. Priors only steer a fit, so it predicts as before; a fit
    without one says which."""
    from tasks.model.evaluation import prepare_training_data
    from tasks.model.structured import StructuredStepTime

    data = prepare_training_data(all_training_features)
    model = StructuredStepTime(config=PHYSICS).fit(data.frame, data.log_mfu)
    trained = model.predict(data.frame)
    older = {k: v for k, v in PHYSICS.items() if k not in ("lowp_expert_ratio_prior", "lowp_expert_ratio_weight")}
    model.config = older
    assert np.array_equal(model.predict(data.frame), trained)
    with pytest.raises(KeyError, match="lacks lowp_expert_ratio_prior, lowp_expert_ratio_weight"):
        StructuredStepTime(config=older).fit(data.frame, data.log_mfu)
    # a constant the prediction needs is still required
    with pytest.raises(KeyError, match="lacks a2a_bytes_per_element"):
        StructuredStepTime(config={k: v for k, v in older.items() if k != "a2a_bytes_per_element"}).predict(
            data.frame)
