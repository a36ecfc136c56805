"""Probes of the trained model on telemetry rows it has never seen (tests/model/probe_grid.py): every row is scored
or says why it is not, nothing raises, and the predictions obey physics. The model is the configured champion's
kind (structured_residual_hgb) fitted on the bundled telemetry, with the real contract-row feature engineering;
its interval is a fixed +-q x scale (what is checked is that every interval holds its point, not its width)."""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

from tests import configured
from tests.model.probe_grid import (
    DENSE,
    FP8_GPUS,
    FP8_SPELLINGS,
    GPUS,
    MOE,
    PARALLELISM_SPELLINGS,
    grid,
    layout,
    row,
)

PREDICTED = "predicted_tokens_per_sec_per_gpu"


@pytest.fixture(scope="session")
def probe_model(all_training_features: pl.DataFrame) -> Any:
    """(TokenEfficiencyModel, ContractFeatures): the champion kind fitted on both bundled telemetry files."""
    from tasks import config_files
    from tasks.model.candidates import RESIDUAL_KIND, build_pipeline, candidate_specs
    from tasks.model.evaluation import TargetSpec, prepare_training_data
    from tasks.model.intervals import FLAG_KINDS, IntervalOffsets, NormalisedConformal
    from tasks.model.serving import TokenEfficiencyModel, TrainingCoverage

    config = config_files.models()
    spec = next(s for s in candidate_specs(config) if s.kind == RESIDUAL_KIND)
    data = prepare_training_data(all_training_features)
    with threadpool_limits(limits=1, user_api="openmp"):
        pipeline = build_pipeline(spec).fit(data.frame, data.log_mfu)
    conformal = NormalisedConformal(level=0.8, log_scale=math.log(0.1), log_widening=(0.2,) * len(FLAG_KINDS),
                                    quantile=1.3, calibration_rows=0)
    model = TokenEfficiencyModel(
        pipeline=pipeline, spec=spec, target=TargetSpec.from_config(config.target),
        intervals=IntervalOffsets(level=0.8, seen_low=-0.1, seen_high=0.1, unseen_low=-0.2, unseen_high=0.2),
        seen_gpus=tuple(sorted(data.frame["gpu"].dropna().unique())), coverage=TrainingCoverage.of_training(data.frame),
        conformal=conformal)
    return model, configured.contract()


def score(probe_model: Any, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows through the registered pyfunc's scoring (score_contract_rows), with the rows' run ids as index."""
    from tasks.model.serving import score_contract_rows

    model, features = probe_model
    frame = pd.DataFrame(rows)
    # one OpenMP thread: the gradient-boosted correction's predict on a few rows is ~5x faster on 2 busy cores
    with threadpool_limits(limits=1, user_api="openmp"):
        out = score_contract_rows(model, features, frame)
    out.index = frame["run_id"]
    return out


def tokens(probe_model: Any, rows: list[dict[str, Any]]) -> list[float]:
    out = score(probe_model, rows)
    assert out["unscored_reason"].isna().all(), out["unscored_reason"].dropna().to_dict()
    return out[PREDICTED].tolist()


@pytest.fixture(scope="session")
def scored_grid(probe_model: Any) -> pd.DataFrame:
    return score(probe_model, grid())


# --- every generated row is scored, finite, positive, inside its interval -------------------------------------------

@pytest.mark.parametrize("gpu", list(GPUS))
def test_every_grid_row_of_a_gpu_is_scored_inside_its_interval(scored_grid: pd.DataFrame, gpu: str) -> None:
    rows = scored_grid[[i.startswith(gpu + "|") for i in scored_grid.index]]
    assert len(rows) >= 24   # 6 models (MoE twice) x 4 machines, bf16 (+ fp8)
    assert rows["unscored_reason"].isna().all(), rows["unscored_reason"].dropna().to_dict()
    low, mid, high = (rows[c].to_numpy() for c in ("predicted_low", PREDICTED, "predicted_high"))
    assert np.isfinite(low).all() and (low > 0).all() and (low <= mid).all() and (mid <= high).all()


def test_the_grid_names_no_throughput_and_covers_dense_and_moe() -> None:
    rows = grid()
    assert not any("tokens_per_sec_per_gpu" in r for r in rows)
    models = {r["model_name"] for r in rows}
    assert set(DENSE) | set(MOE) == models
    assert any("moe_experts" in r for r in rows)
    assert any("moe_experts" not in r and r["model_name"] in MOE for r in rows)


@pytest.mark.parametrize("model", list(MOE))
def test_moe_columns_given_or_from_the_reference_predict_alike(scored_grid: pd.DataFrame, model: str) -> None:
    # the MoE columns of a row, when they equal data/reference/model_shapes.csv, change nothing
    with_columns = scored_grid[[f"|{model}|" in i and i.endswith("moe_columns=True") for i in scored_grid.index]]
    without = scored_grid[[f"|{model}|" in i and i.endswith("moe_columns=False") for i in scored_grid.index]]
    assert len(with_columns) == len(without) > 0
    assert np.allclose(with_columns[PREDICTED].to_numpy(), without[PREDICTED].to_numpy(), rtol=1e-9)


# --- names: GPUs as nvidia-smi prints them, models by hub name, layouts and precisions as people spell them ----------

@pytest.mark.parametrize("smi_name", [g for g in GPUS if GPUS[g] != g])
def test_a_gpu_named_as_smi_prints_it_predicts_as_its_canonical_id(probe_model: Any, smi_name: str) -> None:
    named, canonical = tokens(probe_model, [row(gpu=smi_name, run_id="smi"), row(gpu=GPUS[smi_name], run_id="id")])
    assert named == pytest.approx(canonical, rel=1e-12)


@pytest.mark.parametrize("name", ["meta-llama/Llama-3.1-70B", "llama-3.1-70b", "META-LLAMA/LLAMA-3.1-70B",
                                  " Llama-3.1-70B "])
def test_a_model_by_hub_name_or_in_another_case_gets_its_reference_shape(probe_model: Any, name: str) -> None:
    named, exact = tokens(probe_model, [row(model_name=name, run_id="named"), row(run_id="exact")])
    assert named == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize(("name", "base", "size_of"), [
    ("meta-llama/Llama-3.1-70B-Instruct", "Llama-3.1-70B", "Llama-3.1-70B"),
    ("Llama-2-70b-chat-hf", "Llama-2-70B", "Llama-3.1-70B"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "Mistral-7B", "Llama-3.1-8B"),
    ("Mistral-7B-v0.1", "Mistral-7B", "Llama-3.1-8B"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen3-30B-A3B", "Qwen3-30B-A3B"),
    ("Qwen3-30B-A3B-Base", "Qwen3-30B-A3B", "Qwen3-30B-A3B"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B", "Mixtral-8x7B"),
    ("deepseek-ai/DeepSeek-V3-Base", "DeepSeek-V3", "DeepSeek-V3"),
    ("Qwen/Qwen2.5-7B-it", "Qwen2.5-7B", "Llama-3.1-8B"),
])
def test_a_fine_tuned_or_converted_release_gets_its_base_models_shape(probe_model: Any, name: str, base: str,
                                                                       size_of: str) -> None:
    # the same row (parameters of `size_of`) under the release's name and under its base model's: only the shape
    # lookup can make them differ
    gpus = 64
    named, exact = tokens(probe_model, [row(size_of, num_gpus=gpus, parallelism=layout(size_of, gpus),
                                            model_name=model, run_id=model) for model in (name, base)])
    assert named == pytest.approx(exact, rel=1e-12)


def test_a_release_name_is_not_read_as_its_base_model_when_the_base_is_not_a_known_shape(probe_model: Any) -> None:
    # "Llama-3.1-70B-v9" keeps its "-v9" (a version strip needs a dotted version): estimated, not Llama-3.1-70B's
    unknown, exact = tokens(probe_model, [row(model_name="acme/Llama-3.1-70B-v9-Instruct", run_id="u"),
                                          row(run_id="e")])
    assert unknown != pytest.approx(exact, rel=1e-6)


def test_an_unknown_model_name_falls_back_to_the_estimated_shape(probe_model: Any) -> None:
    # not in model_shapes.csv: the shape is estimated from the parameter count, so it differs from Llama's own
    unknown, exact = tokens(probe_model, [row(model_name="acme/Llama-3.1-70B-v9", run_id="u"), row(run_id="e")])
    assert unknown != pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize("spelling", PARALLELISM_SPELLINGS[1:])
def test_parallelism_spellings_read_as_the_same_layout(probe_model: Any, spelling: str) -> None:
    from tasks.contract.parallelism import parse_parallelism

    layout_read = parse_parallelism(spelling)
    assert (layout_read.tp, layout_read.pp, layout_read.vp) == (4, 2, 5)
    spelled, plain = tokens(probe_model, [row(parallelism=spelling, run_id="s"),
                                          row(parallelism=PARALLELISM_SPELLINGS[0], run_id="p")])
    assert spelled == pytest.approx(plain, rel=1e-12)


@pytest.mark.parametrize("spelling", FP8_SPELLINGS[1:])
def test_fp8_spellings_read_as_fp8(probe_model: Any, spelling: str) -> None:
    spelled, plain, bf16 = tokens(probe_model, [row(precision=spelling, run_id="s"), row(precision="fp8", run_id="f"),
                                                row(precision="bf16", run_id="b")])
    assert spelled == pytest.approx(plain, rel=1e-12)
    assert spelled > bf16   # fp8 linear layers on an H100: faster than bf16


# --- MoE rows without their active parameters -----------------------------------------------------------------------

def test_an_moe_row_without_active_parameters_is_priced_from_its_shape(probe_model: Any) -> None:
    # Qwen3-30B-A3B (model_shapes.csv): 128 experts, top-8, expert FFN 768, 3 matrices, d_model 2048, 48 MoE layers:
    # the 120 experts a token does not use hold 120 x 3 x 2048 x 768 x 48 = 27,179,089,920 parameters, so
    # active = 30.5 - 27.17908992 = 3.32091008 B
    out = score(probe_model, [row("Qwen3-30B-A3B", parallelism="TP 1 EP 8", active_params_b=None, run_id="none"),
                              row("Qwen3-30B-A3B", parallelism="TP 1 EP 8", active_params_b="3.32091008",
                                  run_id="hand"),
                              row("Qwen3-30B-A3B", parallelism="TP 1 EP 8", active_params_b="30.5", run_id="same"),
                              row("Qwen3-30B-A3B", parallelism="TP 1 EP 8", active_params_b=None,
                                  model_name="someone/unknown-30b", run_id="dense")])
    assert out["unscored_reason"].isna().all()
    assert out.loc["none", PREDICTED] == pytest.approx(out.loc["hand", PREDICTED], rel=1e-9)
    assert "active_params_from_shape" in out.loc["none", "extrapolation"]
    assert "moe" in out.loc["none", "extrapolation"].split(",")
    assert "active_params_from_shape" not in out.loc["hand", "extrapolation"]
    # active = total for a model whose shape is MoE says no more than a missing value: priced from the shape too
    assert out.loc["same", PREDICTED] == pytest.approx(out.loc["none", PREDICTED], rel=1e-12)
    assert "active_params_from_shape" in out.loc["same", "extrapolation"]
    # (before: priced as a dense 30.5 B model, 3x slower, as a model of unknown name still is)
    assert out.loc["none", PREDICTED] > 2 * out.loc["dense", PREDICTED]


def test_a_rounded_moe_total_scales_the_shapes_active_share_instead_of_losing_its_rounding(probe_model: Any) -> None:
    # model_shapes.csv, billions. DeepSeek-V3 (61 layers, 3 dense, d_model 7168, 256 experts top-8 + 1 shared of FFN
    # 2048, MLA 128 heads x 160, vocab 129,280, dense FFN 18,432): one expert over its 58 layers 3 x 7168 x 2048 x 58
    # = 2.554331136; routed 256 x that = 653.908770816, idle 248 x = 633.474121728; the rest: embeddings 2 x 129280 x
    # 7168 = 1.85335808, attention 61 x 2 x 7168 x 160 x 128 = 17.90967808, dense FFN 3 x 3 x 7168 x 18432 =
    # 1.189085184, shared 2.554331136: 23.50645248. At 671: 671 - 653.9 = 17.09 is 0.73 of that rest (a plausible
    # total): active = 671 - 633.474121728 = 37.525878272.
    # Kimi-K2 (61 layers, 1 dense, 384 experts top-8 + 1 shared, MLA 64 heads x 160, vocab 163,840): one expert over
    # 60 layers 2.64241152; routed 1014.68602368, idle 376 x = 993.54673152; rest 2 x 163840 x 7168 = 2.34881024 +
    # 61 x 2 x 7168 x 160 x 64 = 8.95483904 + 3 x 7168 x 18432 = 0.396361728 + 2.64241152 = 14.342422528. Its card's
    # "1T" (1000) is less than its routed experts alone: 1000 - 993.5 = 6.5 B would be the whole rounding, so the
    # shape's active share scales the total: 1000 x (14.342422528 + 1014.68602368 - 993.54673152) / (14.342422528 +
    # 1014.68602368) = 34.4812 B (its card: 32 B).
    kimi_active = 1000 * (14.342422528 + 1014.68602368 - 993.54673152) / (14.342422528 + 1014.68602368)
    rows = [row("DeepSeek-V3", parallelism="TP 2 PP 4 EP 8", active_params_b=None, run_id="v3"),
            row("DeepSeek-V3", parallelism="TP 2 PP 4 EP 8", active_params_b="37.525878272", run_id="v3 hand"),
            row("DeepSeek-V3", parallelism="TP 2 PP 4 EP 8", model_name="Kimi-K2", params_b="1000",
                active_params_b=None, run_id="k2"),
            row("DeepSeek-V3", parallelism="TP 2 PP 4 EP 8", model_name="Kimi-K2", params_b="1000",
                active_params_b=repr(kimi_active), run_id="k2 hand")]
    out = score(probe_model, rows)
    assert out["unscored_reason"].isna().all()
    assert out.loc["v3", PREDICTED] == pytest.approx(out.loc["v3 hand", PREDICTED], rel=1e-9)
    assert out.loc["k2", PREDICTED] == pytest.approx(out.loc["k2 hand", PREDICTED], rel=1e-9)
    assert 34.48 < kimi_active < 34.49


def test_an_moe_shape_with_more_experts_than_the_total_holds_is_still_priced_as_moe(probe_model: Any) -> None:
    # DeepSeek-V3 at 671 B with 300 experts given by the row: routed 300 x 2.554331136 = 766.3 > 671. Before, the
    # negative difference sent the row back to dense (671 B active, ~18x the FLOPs); now the shape's share scales it
    out = score(probe_model, [row("DeepSeek-V3", parallelism="TP 2 PP 4 EP 8", active_params_b=None,
                                  moe_experts="300", run_id="300"),
                              row("DeepSeek-V3", parallelism="TP 2 PP 4 EP 8", active_params_b="671", moe_experts="300",
                                  model_name="someone/dense-671b", run_id="dense")])
    assert out["unscored_reason"].isna().all()
    assert out.loc["300", PREDICTED] > 5 * out.loc["dense", PREDICTED]


def test_an_moe_row_without_active_parameters_or_shape_is_priced_as_dense(probe_model: Any) -> None:
    # nothing says the model is MoE: a 30.5 B model of unknown name is priced as what it says it is
    out = score(probe_model, [row("Qwen3-30B-A3B", model_name="someone/unknown-30b", active_params_b=None,
                                  run_id="x")])
    assert out["unscored_reason"].isna().all() and "active_params_from_shape" not in out["extrapolation"].iloc[0]


# --- physics ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("model", "gpu"), [(m, g) for m in (*DENSE, *MOE)
                                            for g in ("NVIDIA H100 80GB HBM3", "NVIDIA B200")])
def test_more_network_per_gpu_never_lowers_tokens_per_gpu(probe_model: Any, model: str, gpu: str) -> None:
    speeds = (12.5, 25, 50, 100, 200, 400, 800, 3200, 1e5)  # up to max_scale_out_gbps_per_gpu
    values = tokens(probe_model, [row(model, gpu, 128, parallelism=layout(model, 128), machine=None,
                                      scale_up_domain_gpus="8", scale_out_gbps_per_gpu=str(g), run_id=str(g))
                                  for g in speeds])
    assert all(b >= a * (1 - 1e-12) for a, b in itertools.pairwise(values)), values


@pytest.mark.parametrize(("model", "gpu"), [(m, g) for m in MOE for g in ("NVIDIA H100 80GB HBM3", "NVIDIA B200",
                                                                          "NVIDIA GB200")])
def test_expert_parallelism_leaving_the_scale_up_domain_is_slower(probe_model: Any, model: str, gpu: str) -> None:
    # EP 32 on 8-GPU NVLink nodes (the all-to-all crosses a 400 Gb/s network) vs the same EP inside a 72-GPU domain
    parallelism = "TP 1 EP 32" if model != "Mixtral-8x7B" else "TP 1 EP 8"
    domains = ("2", "72") if model == "Mixtral-8x7B" else ("8", "72")
    outside, inside = tokens(probe_model, [row(model, gpu, 128, parallelism=parallelism, machine=None,
                                               scale_up_domain_gpus=d, scale_out_gbps_per_gpu="400", run_id=d)
                                           for d in domains])
    assert outside < inside


@pytest.mark.parametrize(("gpu", "precision"), [(g, p) for g in ("NVIDIA H100 80GB HBM3", "NVIDIA H200",
                                                                 "NVIDIA B200", "AMD Instinct MI300X")
                                                for p in ("bf16", "fp8")])
def test_a_bigger_dense_model_is_slower_per_gpu(probe_model: Any, gpu: str, precision: str) -> None:
    values = tokens(probe_model, [row(m, gpu, 128, precision, "TP 8 PP 4", run_id=m) for m in DENSE])
    assert values[0] > values[1] > values[2], dict(zip(DENSE, values, strict=True))


@pytest.mark.parametrize(("model", "gpus"), [(m, n) for m in ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen3-30B-A3B")
                                             for n in (16, 64)])
def test_one_gpu_vms_over_a_slow_network_are_slower_than_nvlink_nodes(probe_model: Any, model: str,
                                                                      gpus: int) -> None:
    parallelism = "FSDP" if model in MOE or model == "Llama-3.1-8B" else "FSDP TP 1"
    vm, node = tokens(probe_model, [row(model, num_gpus=gpus, parallelism=parallelism, machine=m, run_id=m)
                                    for m in ("vm-1gpu-50g", "hgx-400g")])
    assert vm < node


@pytest.mark.parametrize("gpu", FP8_GPUS)
def test_a_faster_gpu_system_does_not_make_a_run_slower_than_its_own_fp8_is_to_bf16(probe_model: Any,
                                                                                     gpu: str) -> None:
    # fp8 runs the linear layers at the low-precision peak and nothing slower: never below bf16 on the same machine
    bf16, fp8 = tokens(probe_model, [row(gpu=gpu, precision=p, run_id=p) for p in ("bf16", "fp8")])
    assert fp8 >= bf16


# --- invalid rows: unscored with a reason ---------------------------------------------------------------------------

INVALID = {
    "scale_out_zero": ({"scale_out_gbps_per_gpu": "0"}, "scale_out_gbps_per_gpu must be above 0"),
    "scale_out_negative": ({"scale_out_gbps_per_gpu": "-400"}, "scale_out_gbps_per_gpu must be above 0"),
    "domain_zero": ({"scale_up_domain_gpus": "0"}, "scale_up_domain_gpus must be at least 1"),
    "experts_zero": ({"moe_experts": "0"}, "moe_experts must be at least 1"),
    "top_k_zero": ({"moe_top_k": "0"}, "moe_top_k must be at least 1"),
    "expert_ffn_zero": ({"moe_expert_ffn": "0"}, "moe_expert_ffn must be at least 1"),
    "shared_negative": ({"moe_shared_experts": "-1"}, "moe_shared_experts must be 0 or more"),
    "top_k_above_experts": ({"moe_experts": "4", "moe_top_k": "8"}, "moe_top_k 8 exceeds moe_experts 4"),
    "ep_above_experts": ({"parallelism": "TP 1 EP 256"}, "EP 256 exceeds the model's 128 routed experts"),
    "active_above_total": ({"active_params_b": "31"}, "active_params_b 31 exceeds params_b 30.5"),
    "active_zero": ({"active_params_b": "0"}, "active_params_b must be above 0"),
    "workload_rlhf": ({"workload": "rlhf"}, "unknown workload 'rlhf'"),
    "params_nan": ({"params_b": "NaN"}, "unreadable values: params_b='NaN'"),
    "network_nan": ({"scale_out_gbps_per_gpu": "nan"}, "unreadable values: scale_out_gbps_per_gpu='nan'"),
    "active_inf": ({"active_params_b": "inf"}, "unreadable values: active_params_b='inf'"),
    "gpus_huge": ({"num_gpus": "1000000000000"}, "num_gpus 1000000000000 outside 1..250000 (config/telemetry.toml"),
    "params_huge": ({"params_b": "1e12", "active_params_b": "3.3"}, "params_b 1000000000000 outside 0.01..100000"),
    # the shape and machine columns: config/telemetry.toml [validation] max_n_layers 10000, max_d_model 1e6,
    # max_moe_experts 1e5 (top-k and shared experts too), max_moe_expert_ffn 1e6, max_scale_out_gbps_per_gpu 1e5,
    # a scale-up domain of at most max_num_gpus
    "layers_huge": ({"n_layers": "10001", "d_model": "2048"}, "n_layers 10001 outside 1..10000"),
    "d_model_huge": ({"n_layers": "48", "d_model": "1000001"}, "d_model 1000001 outside 1..1000000"),
    "experts_huge": ({"moe_experts": "100001"}, "moe_experts 100001 outside 1..100000"),
    "shared_huge": ({"moe_shared_experts": "1e12"}, "moe_shared_experts 1000000000000 outside 0..100000"),
    "expert_ffn_huge": ({"moe_expert_ffn": "2000000"}, "moe_expert_ffn 2000000 outside 1..1000000"),
    "domain_huge": ({"scale_up_domain_gpus": "250001"}, "scale_up_domain_gpus 250001 outside 1..250000"),
    "scale_out_huge": ({"scale_out_gbps_per_gpu": "1e300"}, "scale_out_gbps_per_gpu 1e+300 outside 0..100000"),
    "micro_zero": ({"micro_batch": "0"}, "micro_batch must be at least 1"),
    "batch_zero": ({"global_batch_tokens": "0"}, "global_batch_tokens must be at least 1"),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_an_impossible_row_is_unscored_with_its_reason(probe_model: Any, case: str) -> None:
    changes, reason = INVALID[case]
    out = score(probe_model, [row("Qwen3-30B-A3B", num_gpus=256, parallelism="TP 1 EP 8", run_id=case) | changes,
                              row("Qwen3-30B-A3B", num_gpus=256, parallelism="TP 1 EP 8", run_id="sound")])
    assert reason in str(out.loc[case, "unscored_reason"])
    assert math.isnan(out.loc[case, PREDICTED])
    assert out.loc["sound", "unscored_reason"] is None   # the other row of the same call is scored


# --- odd values: never an exception ---------------------------------------------------------------------------------

ODD = ["0", "-1", "1", "3", "1e12", "1000000000000", "1e300", "1e-300", "NaN", "inf", "-inf", "nan%", "abc", "",
       " ", "9223372036854775808", "TP 1000000000000", "EP 1e12", "4.5"]
COLUMNS = ["num_gpus", "params_b", "active_params_b", "seq_len", "micro_batch", "global_batch_tokens", "n_layers",
           "d_model", "moe_experts", "moe_top_k", "moe_expert_ffn", "moe_shared_experts", "scale_up_domain_gpus",
           "scale_out_gbps_per_gpu", "parallelism", "gpu", "precision", "model_name", "workload"]


def check_scored_or_said_why(out: pd.DataFrame) -> None:
    for _, r in out.iterrows():
        if r["unscored_reason"] is None or (isinstance(r["unscored_reason"], float)):
            low, mid, high = r["predicted_low"], r[PREDICTED], r["predicted_high"]
            assert math.isfinite(mid) and mid > 0 and math.isfinite(low) and 0 < low <= mid <= high < math.inf, r
        else:
            assert isinstance(r["unscored_reason"], str) and r["unscored_reason"]
            assert math.isnan(r[PREDICTED])


@pytest.mark.parametrize("value", ["1e12", "1000000000000"])
@pytest.mark.parametrize("model", ["Llama-3.1-70B", "Qwen3-30B-A3B"])
def test_1e12_in_every_column_is_scored_or_said_why(probe_model: Any, value: str, model: str) -> None:
    rows = [row(model, parallelism=layout(model, 64), run_id=c) | {c: value} for c in COLUMNS]
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # an overflow warning is a failure too
        check_scored_or_said_why(score(probe_model, rows))


def test_hostile_values_never_raise(probe_model: Any) -> None:
    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(model=st.sampled_from(["Llama-3.1-70B", "Qwen3-30B-A3B", "DeepSeek-V3"]),
           changes=st.dictionaries(st.sampled_from(COLUMNS), st.sampled_from(ODD), min_size=1, max_size=4))
    def probe(model: str, changes: dict[str, str]) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_scored_or_said_why(score(probe_model, [row(model, parallelism=layout(model, 64)) | changes]))

    probe()
