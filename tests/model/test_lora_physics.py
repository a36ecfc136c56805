"""LoRA / QLoRA in the structured step time: the frozen base (no weight gradients, optimizer and gradient
all-reduce on the adapters only) and QLoRA's dequantisation, worked out by hand; the leave-one-MoE-family-out
folds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tasks.model.evaluation import ALWAYS_TRAINED, grouped_folds
from tasks.model.structured import StructuredConfig, compute_terms, step_time_parts
from tests.model.test_structured import PARAMS, PHYSICS, ROW

CONFIG = StructuredConfig.from_config(PHYSICS)
# 8 GPUs of one H100 node, data parallel, no layout beyond it (the DDP all-reduce of the gradients over NVLink)
DDP = dict(ROW, num_gpus=8, parallelism="DP 8", global_batch_tokens=8 * 8192, scale_up_domain_gpus=8)


def test_lora_freezes_the_base_weights() -> None:
    lora = dict(DDP, workload="lora")
    terms = compute_terms(pd.DataFrame([DDP, lora]), CONFIG)
    parts = step_time_parts(terms, PARAMS)
    # FLOPs: forward 2N + backward through the activations 2N (no weight gradients): 4 x 8.03e9 vs 6 x 8.03e9
    assert terms.linear_flops[0] == pytest.approx(6 * 8.03e9)
    assert terms.linear_flops[1] == pytest.approx(4 * 8.03e9)
    # optimizer: 16 B x 8.03e9 params / 3.35e12 B/s per 8,192 tokens per GPU step; LoRA: x 0.002 (the adapters)
    assert parts["optimizer"][0] == pytest.approx(16 * 8.03e9 / 3.35e12 / 8192)
    assert parts["optimizer"][1] == pytest.approx(16 * 8.03e9 * 0.002 / 3.35e12 / 8192)
    # gradients reduced in fp32 (4 B) and weights gathered back in bf16 (2 B): 8.03e9 x 6 B x 7/8 = 42.16e9 B over
    # NVLink 450e9 B/s, per 8,192 tokens: 1.1436e-5 s per token (before overlap); LoRA's adapters: 0.002 of it
    assert terms.dp_s[0] == pytest.approx(8.03e9 * 6 * 7 / 8 / 450e9 / 8192)
    assert terms.dp_s[0] == pytest.approx(1.1436e-5, rel=1e-4)
    assert terms.dp_s[1] == pytest.approx(terms.dp_s[0] * 0.002)
    assert parts["qlora_dequant"][0] == parts["qlora_dequant"][1] == 0.0


def test_fsdp_lora_gathers_the_frozen_weights_twice_and_reduces_no_gradient() -> None:
    fsdp = dict(DDP, parallelism="FSDP 8 GA 1")
    terms = compute_terms(pd.DataFrame([fsdp, dict(fsdp, workload="lora")]), CONFIG)
    # pretrain per micro-step: gather forward and backward (2 B each, bf16) + reduce-scatter (4 B, fp32) = 8 B per
    # parameter; LoRA: the 2 gathers, 4 B
    assert terms.dp_s[1] == pytest.approx(terms.dp_s[0] * 4 / 8)


def test_qlora_dequantises_its_4_bit_base_every_weight_pass() -> None:
    one = dict(ROW, workload="qlora", parallelism="", global_batch_tokens=8192, micro_batch=2)
    parts = step_time_parts(compute_terms(pd.DataFrame([one]), CONFIG), PARAMS)
    # 4.5 B x 8.03e9 params x 2 weight passes (forward, backward) / 3.35e12 B/s per micro-step of 2 x 4,096 tokens
    assert parts["qlora_dequant"][0] == pytest.approx(4.5 * 8.03e9 * 2 / 3.35e12 / 8192)


def test_leave_one_moe_family_out_never_holds_out_the_dense_runs() -> None:
    groups = np.array(["DeepSeek", ALWAYS_TRAINED, "Qwen", ALWAYS_TRAINED, "Qwen", "Grok"])
    folds = grouped_folds(groups, max_folds=10)
    # three families -> three folds; the dense rows 1 and 3 are in every fold's training rows, in no test
    assert [f.held_out for f in folds] == ["DeepSeek", "Grok", "Qwen"]
    assert [f.test.tolist() for f in folds] == [[0], [5], [2, 4]]
    assert [f.train.tolist() for f in folds] == [[1, 2, 3, 4, 5], [0, 1, 2, 3, 4], [0, 1, 3, 5]]


def test_a_family_grouping_without_families_is_left_out_and_one_family_is_one_fold() -> None:
    from tasks.model.evaluation import TrainingData, cv_folds

    def data(families: list[str | None]) -> TrainingData:
        frame = pd.DataFrame({"moe_family": families, "gpu": ["A", "B", "A", "B"]})
        zeros = np.zeros(len(families))
        return TrainingData(frame=frame, log_mfu=zeros, tokens_per_sec=zeros + 1, physics_bound=zeros + 1,
                            digest="", dropped_rows=0)

    # dense telemetry only (the first bundled file): nothing to hold out under moe_family, the GPU folds stay
    assert list(cv_folds(data([None] * 4), ["gpu", "moe_family"], 10)) == ["gpu"]
    # one MoE family: one fold holding it out against the dense rows
    [fold] = cv_folds(data([None, "Grok", None, "Grok"]), ["moe_family"], 10)["moe_family"]
    assert (fold.held_out, fold.train.tolist(), fold.test.tolist()) == ("Grok", [0, 2], [1, 3])


def test_an_unnamed_lora_layout_is_fsdp_only_when_its_frozen_base_does_not_fit() -> None:
    # Llama-2-70B (68.98e9 parameters) LoRA on 8 GPUs, no layout named, as the MLPerf LoRA rows without one. Held
    # per GPU: the frozen bf16 base 2 B + the adapters' optimizer state 16 B x 0.002 = 2.032 B per parameter:
    # 140.2 GB. A 180 GB B200 fits it (<= 0.8 x 180 = 144 GB): plain data parallelism, only the adapters'
    # gradients all-reduced. An 80 GB H100 does not (> 64 GB): FSDP, the base gathered twice per micro-step.
    # Before, the base was sized as if trained (16 B per parameter: 1,104 GB), and both were priced as FSDP.
    llama = dict(DDP, params_b=68.98, active_params_b=68.98, n_layers=80, d_model=8192, parallelism="",
                 workload="lora", micro_batch=1, seq_len=8192, global_batch_tokens=8 * 8192)
    b200, h100 = dict(llama, gpu_memory_gb=180.0), dict(llama, gpu_memory_gb=80.0)
    terms = compute_terms(pd.DataFrame([b200, h100]), CONFIG)
    # B200: the adapters' gradients, 68.98e9 x 0.002 x (4 + 2) B x 7/8 over NVLink 450e9 B/s, per 8,192 tokens
    assert terms.dp_s[0] == pytest.approx(68.98e9 * 0.002 * 6 * 7 / 8 / 450e9 / 8192)
    # H100: 2 gathers of the whole base per micro-step (one micro-step of 8,192 tokens), 68.98e9 x 2 B x 2 x 7/8
    assert terms.dp_s[1] == pytest.approx(68.98e9 * 2 * 2 * 7 / 8 / 450e9 / 8192)
    # QLoRA's 4-bit base (0.52 B + 0.032 B = 38.1 GB) fits even the H100: no FSDP
    qlora = compute_terms(pd.DataFrame([dict(h100, workload="qlora")]), CONFIG)
    assert qlora.dp_s[0] == pytest.approx(terms.dp_s[0])
