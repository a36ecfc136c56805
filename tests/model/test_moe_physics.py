"""MoE and multi-node physics of the structured model, worked by hand: MoE FLOPs from the shape, all-to-all
volume and time inside and across the scale-up domain, FSDP traffic per step over the network a machine really
has, the machine defaults of a GPU system, MoE shape columns overriding the reference, and the estimate used when
a model has no MoE shape at all."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import polars as pl
import pytest

from tasks.config_files import load_config
from tasks.model.structured import StructuredConfig, compute_terms, estimated_moe_shape, step_time_parts
from tests import configured

# data/reference/model_shapes.csv, Qwen3-30B-A3B (HF config.json): 48 layers, d_model 2048, 128 experts, top-8,
# expert FFN 768, SwiGLU (3 matrices), no shared experts, every layer MoE. 8 H100 SXM (HGX: NVLink 450 GB/s per
# direction, 400 Gb/s network per GPU), as the bundled NeMo AutoModel run of that model (micro 4 x 4096 tokens).
QWEN3_30B = {
    "num_gpus": 8, "params_b": 30.5, "active_params_b": 3.3, "seq_len": 4096, "micro_batch": 4,
    "global_batch_tokens": 2_097_152, "peak_tflops": 989.0, "peak_16bit_tflops": 989.0, "mem_bandwidth_tbps": 3.35,
    "intra_node_bw_gbps_unidir": 450.0, "gpu_memory_gb": 80.0, "n_layers": 48, "d_model": 2048, "n_heads": 32,
    "head_dim": 128, "ffn_matrices": 3, "moe_experts": 128, "moe_top_k": 8, "moe_expert_ffn": 768,
    "moe_shared_experts": 0, "moe_dense_layers": 0, "precision": "bf16", "precision_recipe": "none",
    "workload": "pretrain", "activation_checkpointing": "none", "framework": "NeMo AutoModel",
    "parallelism": "FSDP 8 TP 1 PP 1 CP 1 EP 8 GA 16", "gpu": "H100-SXM", "matmul_ceiling_16bit": 794.5 / 989,
    "matmul_ceiling_lowp": 1402.6 / 1979, "scale_up_domain_gpus": 8, "scale_up_gbps_per_gpu": 450.0,
    "scale_out_gbps_per_gpu": 400.0,
}
# config/models.toml [structured]: scale-out efficiency 0.9, all-to-all 0.8 (scale-up) and 0.6 (network), bf16 tokens
CONFIG = StructuredConfig.from_config(load_config("models")["structured"])


def terms_of(*rows: dict) -> object:
    return compute_terms(pd.DataFrame(list(rows)), CONFIG)


def test_moe_flops_per_token_come_from_the_shape() -> None:
    terms = terms_of(QWEN3_30B)
    # routed experts run per token: top-8 x 3 matrices x 2048 x 768 x 48 layers = 1,811,939,328 parameters,
    # 2 FLOPs each, x3 (forward + backward): 10,871,635,968 FLOPs per token
    assert terms.expert_flops[0] == pytest.approx(6 * 8 * 3 * 2048 * 768 * 48)
    assert terms.expert_flops[0] == pytest.approx(10_871_635_968)
    # everything else every token runs (attention, router, embeddings): 3.3e9 - 1,811,939,328 = 1,488,060,672
    # parameters, x 6 = 8,928,364,032 FLOPs per token
    assert terms.linear_flops[0] == pytest.approx(6 * (3.3e9 - 1_811_939_328))
    # attention: 32 heads x 128 = 4096 wide (twice d_model), 2 x 4096 tokens x 4096 x 48 layers x 3 (fwd + bwd)
    assert terms.attention_flops[0] == pytest.approx(2 * 4096 * 4096 * 48 * 3)


def test_grouped_gemm_size_is_tokens_per_expert_times_expert_ffn() -> None:
    terms = terms_of(QWEN3_30B)
    # 4 x 4096 = 16,384 tokens per GPU per micro-step, x top-8 routed copies, spread over 128 / EP 8 = 16 local
    # experts: 16,384 x 8 x 8 / 128 = 8,192 tokens per expert; x 768 FFN columns = 6,291,456
    assert terms.expert_gemm_size[0] == pytest.approx(8192 * 768)
    parts = step_time_parts(terms, dict(PARAMS, grouped_gemm_half_size=6_291_456.0))
    ungrouped = step_time_parts(terms, dict(PARAMS, grouped_gemm_half_size=1e-9))
    # a half size equal to the GEMM size: the experts run at half the speed of the dense GEMMs
    assert parts["experts"][0] == pytest.approx(2 * ungrouped["experts"][0])


def test_the_most_loaded_expert_parallel_rank_sets_the_expert_time() -> None:
    terms = terms_of(QWEN3_30B, dict(QWEN3_30B, parallelism="FSDP 8 GA 16"))
    # EP 8: each GPU holds 128 / 8 = 16 experts; the step waits for the most loaded of 8 ranks, ~ sqrt(2 ln 8) = 2.039
    # standard deviations of a rank's load above the mean, a rank's CV being an expert's / sqrt(16):
    # sqrt(2 ln 8 / 16) = 0.50985
    assert terms.imbalance_units[0] == pytest.approx(math.sqrt(2 * math.log(8) / 16))
    assert terms.imbalance_units[0] == pytest.approx(0.50985, rel=1e-4)
    # the multinomial noise of 8,192 tokens per expert per micro-step: 1 / sqrt(8192) = 0.011049
    assert terms.sampling_cv[0] == pytest.approx(1 / math.sqrt(8192))
    # expert load CV 0.3: 1 + 0.50985 x sqrt(0.3^2 + 0.011049^2) = 1.15306 x the expert time of a balanced router
    # (its own noise only: 1 + 0.50985 x 0.011049 = 1.00563)
    loaded = step_time_parts(terms, dict(PARAMS, expert_load_cv=0.3))["experts"]
    balanced = step_time_parts(terms, dict(PARAMS, expert_load_cv=0.0))["experts"]
    assert loaded[0] / balanced[0] == pytest.approx(1.15306 / 1.00563, rel=1e-4)
    # EP 1 (no EP inside one node): every GPU runs every expert on its own tokens, no rank waits for another
    assert terms.imbalance_units[1] == 0.0
    assert loaded[1] == pytest.approx(balanced[1])


def test_fp8_grouped_gemms_run_at_their_own_low_precision_ratio() -> None:
    fp8 = dict(QWEN3_30B, precision="fp8", precision_recipe="delayed")
    terms = terms_of(fp8)
    half = step_time_parts(terms, dict(PARAMS, lowp_expert_ratio=0.45))
    full = step_time_parts(terms, dict(PARAMS, lowp_expert_ratio=0.9))
    # the routed experts' seconds scale with 1 / lowp_expert_ratio (0.9 -> 0.45: twice as long); the dense linear
    # layers keep lowp_matmul_ratio
    assert half["experts"][0] == pytest.approx(2 * full["experts"][0])
    assert half["linear"][0] == pytest.approx(full["linear"][0])
    # a 16-bit run does not depend on it
    bf16 = terms_of(QWEN3_30B)
    assert step_time_parts(bf16, dict(PARAMS, lowp_expert_ratio=0.45))["experts"][0] == pytest.approx(
        step_time_parts(bf16, PARAMS)["experts"][0])


def test_expert_parallelism_leaving_the_domain_is_flagged() -> None:
    from tasks.model.structured import expert_parallel_leaves_domain

    rows = pd.DataFrame([
        dict(QWEN3_30B, parallelism="FSDP 8 EP 8", num_gpus=8, scale_up_domain_gpus=8),      # 8 <= 8: inside
        dict(QWEN3_30B, parallelism="FSDP 32 EP 32", num_gpus=32, scale_up_domain_gpus=8),   # 32 > 8
        dict(QWEN3_30B, parallelism="FSDP 32 EP 32", num_gpus=32, scale_up_domain_gpus=72),  # NVL72: inside
        dict(QWEN3_30B, parallelism="TP 4 EP 8", num_gpus=64, scale_up_domain_gpus=8),       # EP 8 x ETP 4 = 32 > 8
        dict(QWEN3_30B, parallelism="FSDP 64", num_gpus=64, scale_up_domain_gpus=8),         # EP taken as 64
        dict(QWEN3_30B, parallelism="FSDP 64", num_gpus=64, scale_up_domain_gpus=8, params_b=8.0,
             active_params_b=8.0),                                                            # dense: never
    ])
    assert list(expert_parallel_leaves_domain(rows)) == [False, True, False, True, True, False]


def test_expert_data_parallelism_named_gives_the_expert_tensor_parallel_size() -> None:
    from tasks.model.structured import expert_parallel_leaves_domain

    # Megatron lays 256 GPUs out as ETP x EP x EDP x PP for the experts: "TP 2 EP 8 EDP 32" leaves ETP = 256 / (8 x
    # 32 x 1) = 1, an EP group of 8 GPUs inside the 8-GPU node. Read as ETP = TP = 2 (Megatron's default when
    # neither is named), the group was 16 GPUs and its all-to-all was priced over the network.
    named = dict(QWEN3_30B, num_gpus=256, parallelism="TP 2 PP 1 CP 1 EP 8 EDP 32 DP 128, FSDP on",
                 global_batch_tokens=8_388_608)
    default = dict(named, parallelism="TP 2 PP 1 CP 1 EP 8 DP 128, FSDP on")
    assert list(expert_parallel_leaves_domain(pd.DataFrame([named, default]))) == [False, True]
    terms = terms_of(named, default)
    # inside the node: 131,072 B x 7/8 x 48 layers at 450 GB/s x 0.8 (as test_all_to_all_bytes_and_time_inside...)
    assert terms.a2a_s[0] == pytest.approx(114_688 * 48 / 360e9)
    assert terms.a2a_s[1] > 5 * terms.a2a_s[0]


def test_fsdp_without_ep_inside_one_domain_shards_the_experts_instead() -> None:
    # Qwen3-30B-A3B with "FSDP 8" and no EP on one 8-GPU node (NeMo AutoModel's and torchtitan's default EP is 1):
    # no all-to-all; FSDP gathers every weight, experts included, over NVLink. 30.5e9 parameters x (2 B gathered
    # forward + 2 B backward + 4 B reduce-scattered) x 16 micro-steps x 7/8 at 450 GB/s, per 2,097,152 / 8 =
    # 262,144 tokens per GPU step: 7.591 s per step, 2.896e-5 s per token. Before, EP was taken as 8 (the FSDP
    # group).
    inside = dict(QWEN3_30B, parallelism="FSDP 8 GA 16")
    terms = terms_of(inside)
    assert terms.a2a_s[0] == 0.0
    assert terms.dp_s[0] == pytest.approx(30.5e9 * 8 * 16 * 7 / 8 / 450e9 / 262_144)
    assert terms.dp_s[0] == pytest.approx(2.896e-5, rel=1e-3)


def test_all_to_all_bytes_and_time_inside_the_domain() -> None:
    terms = terms_of(QWEN3_30B)
    # one MoE layer, per token: dispatch + combine, forward + backward = 4 x top-8 x 2048 x 2 bytes = 131,072 B,
    # of which 7/8 leave the GPU at EP 8: 114,688 B; x 48 layers = 5,505,024 B per token
    per_layer = 4 * 8 * 2048 * 2 * 7 / 8
    assert per_layer == 114_688
    # EP 8 fits the 8-GPU NVLink domain: 450 GB/s x 0.8 = 360 GB/s -> 5,505,024 / 360e9 = 1.52917e-5 s per token
    assert terms.a2a_s[0] == pytest.approx(114_688 * 48 / 360e9)
    assert terms.a2a_s[0] == pytest.approx(1.52917e-5, rel=1e-5)


def test_each_all_to_all_call_has_a_fixed_cost_spread_over_the_micro_step() -> None:
    small = dict(QWEN3_30B, micro_batch=1, parallelism="FSDP 8 TP 2 PP 1 CP 2 EP 8 GA 16")
    terms = terms_of(QWEN3_30B, small, dict(QWEN3_30B, parallelism="FSDP 8 TP 1 PP 1 CP 1 GA 16"))
    # dispatch + combine, forward + backward: 4 calls per MoE layer per micro-step, x 48 layers = 192 calls over
    # the micro-step's 4 x 4096 = 16,384 tokens on a GPU: 0.01171875 calls per token
    assert terms.a2a_call_units[0] == pytest.approx(192 / 16_384)
    # micro-batch 1 split over TP 2 x CP 2: 4096 / 4 = 1,024 tokens a GPU per micro-step, 192 / 1,024 = 0.1875
    assert terms.a2a_call_units[1] == pytest.approx(0.1875)
    # no expert parallelism (FSDP shards the experts inside the node): no all-to-all, no call
    assert terms.a2a_call_units[2] == 0.0
    # 500 us a call: 0.01171875 x 500e-6 = 5.859375e-6 s per token joins the bytes' 1.52917e-5 s, hidden as far as
    # a2a_overlap 0.3 hides (compute is far longer): 0.7 x 5.859375e-6 = 4.1015625e-6 s more per token
    with_calls = step_time_parts(terms, dict(PARAMS, a2a_call_us=500.0))["all_to_all"]
    without = step_time_parts(terms, dict(PARAMS, a2a_call_us=0.0))["all_to_all"]
    assert with_calls[0] - without[0] == pytest.approx(4.1015625e-6, rel=1e-4)
    assert with_calls[0] == pytest.approx(0.7 * (1.52917e-5 + 5.859375e-6), rel=1e-3)
    # the small micro-step pays 16x as much a token: 0.1875 x 500e-6 x 0.7 = 6.5625e-5 s
    assert with_calls[1] - without[1] == pytest.approx(6.5625e-5, rel=1e-4)


def test_all_to_all_across_nodes_is_priced_at_the_network() -> None:
    hgx = dict(QWEN3_30B, num_gpus=32, parallelism="FSDP 32 EP 32", global_batch_tokens=4_194_304)
    nvl72 = dict(hgx, scale_up_domain_gpus=72, scale_up_gbps_per_gpu=900.0)
    terms = terms_of(hgx, nvl72)
    # EP 32: 131,072 B x 31/32 x 48 layers = 6,094,848 B per token
    volume = 131_072 * 31 / 32 * 48
    assert volume == 6_094_848
    # on 8-GPU HGX nodes 7 of the 31 peers share the NVLink domain (360 GB/s), 24 are across the network:
    # 400 Gb/s / 8 = 50 GB/s x 0.6 = 30 GB/s. 6,094,848 x (7/31 / 360e9 + 24/31 / 30e9) = 1.61108e-4 s per token
    assert terms.a2a_s[0] == pytest.approx(volume * (7 / 31 / 360e9 + 24 / 31 / 30e9))
    assert terms.a2a_s[0] == pytest.approx(1.61108e-4, rel=1e-5)
    # inside a 72-GPU NVL72 domain (900 GB/s x 0.8 = 720 GB/s): 6,094,848 / 720e9 = 8.465e-6 s, 19x less
    assert terms.a2a_s[1] == pytest.approx(volume / 720e9)
    assert terms.a2a_s[0] / terms.a2a_s[1] == pytest.approx(19.03, rel=1e-3)


# Llama-2-70B shape (config/workloads.toml "70b-pretrain-200b"): 68.98e9 parameters, 80 x 8192, 64 H100 SXM,
# micro-batch 1 x 4096 tokens, 4,194,304 tokens per step, sharded with FSDP.
LLAMA_70B = {
    "num_gpus": 64, "params_b": 68.98, "active_params_b": 68.98, "seq_len": 4096, "micro_batch": 1,
    "global_batch_tokens": 4_194_304, "peak_tflops": 989.0, "peak_16bit_tflops": 989.0, "mem_bandwidth_tbps": 3.35,
    "intra_node_bw_gbps_unidir": 450.0, "gpu_memory_gb": 80.0, "n_layers": 80, "d_model": 8192, "n_heads": 64,
    "head_dim": 128, "precision": "bf16", "precision_recipe": "none", "workload": "pretrain",
    "activation_checkpointing": "none", "framework": None, "parallelism": "FSDP", "gpu": "H100-SXM",
    "matmul_ceiling_16bit": 794.5 / 989, "matmul_ceiling_lowp": 1402.6 / 1979,
}
ONE_GPU_VMS = {"scale_up_domain_gpus": 1, "scale_up_gbps_per_gpu": 450.0, "scale_out_gbps_per_gpu": 100.0}
HGX_NODES = {"scale_up_domain_gpus": 8, "scale_up_gbps_per_gpu": 450.0, "scale_out_gbps_per_gpu": 400.0}
# data/reference/model_shapes.csv, Qwen3-235B-A22B (HF config.json): 94 layers, d_model 4096, 64 heads x 128,
# vocabulary 151,936, 128 experts, top-8, expert FFN 1536. 256 H100 as Megatron-MoE-ModelZoo's runs of it
# (micro 1 x 4096 tokens, 2048 sequences per step, selective recompute).
QWEN3_235B = dict(QWEN3_30B, num_gpus=256, params_b=235.0, active_params_b=22.0, micro_batch=1,
                  global_batch_tokens=8_388_608, n_layers=94, d_model=4096, n_heads=64, vocab=151_936,
                  moe_expert_ffn=1536, activation_checkpointing="selective", framework="Megatron-LM",
                  parallelism="TP 2 PP 32 CP 1 EP 8 VP 3 ETP 1 EDP 1 DP 4")


def test_a_deep_pipeline_waits_for_the_rank_holding_the_output_head() -> None:
    deep = QWEN3_235B
    shallow = dict(QWEN3_235B, parallelism="TP 4 PP 8 CP 1 EP 8 VP 4 ETP 1 EDP 4 DP 8")
    flat = dict(QWEN3_235B, parallelism="TP 2 PP 1 CP 1 EP 8 EDP 32 DP 128, FSDP on")
    terms = terms_of(deep, shallow, flat)
    # per token, forward + backward (x3): the output head 2 x 151,936 x 4096 x 3 = 3,733,979,136 FLOPs; the rest:
    # 6 x 22e9 = 132e9 linear + expert FLOPs, and attention 2 x 4096 x (64 x 128) x 94 layers x 4 (selective
    # recompute runs attention forward again) = 25,232,932,864; one layer = (157,232,932,864 - 3,733,979,136) / 94
    head = 2 * 151_936 * 4096 * 3
    assert head == 3_733_979_136
    layer = (132e9 + 2 * 4096 * 8192 * 94 * 4 - head) / 94
    assert layer == pytest.approx(1_632_967_593, abs=1)
    head_layers = head / layer                                       # 2.28662 layers
    # 94 layers + an embedding and a head slot = 96 slots; PP 32: 3 slots a rank, the last one 2 layers + the head:
    # 4.28662 against the mean rank's (94 + 2.28662) / 32 = 3.00896 -> x 1.42463
    assert terms.stage_imbalance[0] == pytest.approx((2 + head_layers) / ((94 + head_layers) / 32))
    assert terms.stage_imbalance[0] == pytest.approx(1.42463, rel=1e-5)
    # PP 8: 12 slots a rank, the last 11 layers + the head: 13.28662 / 12.03583 -> x 1.10393
    assert terms.stage_imbalance[1] == pytest.approx(1.10393, rel=1e-5)
    # no pipeline: nothing to wait for
    assert terms.stage_imbalance[2] == 1.0
    # the imbalance scales the matmul parts, as the bubble does (PP 32, VP 3, 512 micro-steps: 31 / (3 x 512))
    parts = step_time_parts(terms, PARAMS)
    attention = terms.attention_flops / (terms.peak_16bit * PARAMS["attention_efficiency"])
    assert parts["attention"][0] == pytest.approx(attention[0] * (1 + 31 / (3 * 512)) * 1.42463, rel=1e-5)


PARAMS = {"matmul_efficiency": 0.6, "lowp_matmul_ratio": 0.9, "lowp_expert_ratio": 0.9,
          "attention_efficiency": 0.3, "activation_bytes": 100.0,
          "quantisation_bytes": 0.0, "grouped_gemm_half_size": 1.0e6, "moe_permute_bytes": 16.0,
          "layer_overhead_us": 20.0, "expert_load_cv": 0.0, "tp_overlap": 0.0, "dp_overlap": 0.8, "a2a_overlap": 0.3,
          "power_clock_exponent": 1.0 / 3.0, "a2a_call_us": 0.0}


def test_fsdp_bytes_per_step_over_the_network_a_machine_has() -> None:
    terms = terms_of(dict(LLAMA_70B, **ONE_GPU_VMS), dict(LLAMA_70B, **HGX_NODES))
    # 4,194,304 / (64 GPUs x 1 x 4096) = 16 micro-steps per step; FSDP gathers the weights forward and backward
    # (bf16, 2 B each) and reduce-scatters the gradients (fp32, 4 B) every micro-step: 68.98e9 x 8 B x 16 x 63/64 =
    # 8.69148e12 B per GPU
    step_bytes = 68.98e9 * 8 * 16 * 63 / 64
    assert step_bytes == pytest.approx(8.69148e12, rel=1e-5)
    # 1-GPU VMs: each GPU has only its own 100 Gb/s = 12.5 GB/s x 0.9 = 11.25 GB/s: 772.6 s per step, over
    # 4,194,304 / 64 = 65,536 tokens per GPU: 1.17885e-2 s per token
    assert terms.dp_s[0] == pytest.approx(step_bytes / 11.25e9 / 65_536)
    assert terms.dp_s[0] == pytest.approx(1.17885e-2, rel=1e-4)
    # 8-GPU HGX nodes: one ring per NIC, each leaving the node once: 8 x 50 GB/s x 0.9 = 360 GB/s (below NVLink's
    # 450): 24.14 s per step, 3.684e-4 s per token
    assert terms.dp_s[1] == pytest.approx(step_bytes / 360e9 / 65_536)


def test_an_fsdp_group_over_the_data_centre_network_gathers_over_the_nic() -> None:
    # MaxText's "FSDP 8 (DCN)" on 64 GPUs of 8-GPU HGX nodes: the weights are sharded over 8 GPUs, one per node
    # (8 apart), and replicated inside each node. A ring of 8 peers that leave the node every hop runs at one
    # GPU's NIC: 50 GB/s x 0.9 = 45 GB/s, over 68.98e9 x 8 B x 16 micro-steps x 7/8 = 7.72576e12 B per step:
    # 171.7 s, 2.61946e-3 s per token of 65,536. "FSDP" over all 64 GPUs: 8.69148e12 B at 360 GB/s, 3.6838e-4 s.
    terms = terms_of(dict(LLAMA_70B, parallelism="FSDP 8 (DCN) x EP 8 (ICI)", **HGX_NODES),
                     dict(LLAMA_70B, **HGX_NODES))
    assert terms.dp_s[0] == pytest.approx(68.98e9 * 8 * 16 * 7 / 8 / 45e9 / 65_536)
    assert terms.dp_s[0] == pytest.approx(2.61946e-3, rel=1e-4)
    assert terms.dp_s[1] == pytest.approx(68.98e9 * 8 * 16 * 63 / 64 / 360e9 / 65_536)


def test_70b_on_one_gpu_vms_is_far_slower_than_on_nvlink_nodes() -> None:
    vms, hgx = (step_time_parts(terms_of(dict(LLAMA_70B, **machine)), PARAMS) for machine in (ONE_GPU_VMS,
                                                                                               HGX_NODES))
    # compute ~ 6 x 68.98e9 / (794.5e12 x 0.6) = 8.7e-4 s per token on both; FSDP 1.18e-2 s per token over the
    # VMs' network cannot hide behind it (exposed: 0.2 x 1.18e-2 + (0.8 x 1.18e-2 - ~1e-3) ~ 1.1e-2 s), while the
    # HGX nodes' 3.7e-4 s hides (0.2 x 3.7e-4 = 7.4e-5 s exposed)
    time_vms, time_hgx = (sum(p[0] for p in parts.values()) for parts in (vms, hgx))
    assert vms["data_parallel"][0] > 7e-3
    assert hgx["data_parallel"][0] < 1e-4
    # tokens/s per GPU on 1-GPU VMs below 0.6 x (in fact ~0.1 x) that on 8-GPU NVLink machines
    assert (1 / time_vms) / (1 / time_hgx) < 0.6
    assert (1 / time_vms) / (1 / time_hgx) == pytest.approx(0.11, abs=0.03)


def test_a_model_without_moe_shape_gets_an_estimate() -> None:
    shape = estimated_moe_shape(np.array([100e9]), np.array([10e9]), np.array([32.0]), np.array([4096.0]),
                                np.array([3.0]), CONFIG)
    # outside the experts: 4 x 4096^2 x 32 + 2 x 128,000 x 4096 = 2.1475e9 + 1.0486e9 = 3.1961e9 parameters;
    # experts / top-k = (100e9 - 3.1961e9) / (10e9 - 3.1961e9) = 14.23 > 6: fine-grained, top-8, 114 experts
    n0 = 4 * 4096**2 * 32 + 2 * 128_000 * 4096
    ratio = (100e9 - n0) / (10e9 - n0)
    assert ratio == pytest.approx(14.2277, rel=1e-4)
    assert (shape.top_k[0], shape.experts[0]) == (8.0, 114.0)
    # expert FFN = (10e9 - 3.1961e9) / (8 x 3 x 4096 x 32) = 2,162.9
    assert shape.expert_ffn[0] == pytest.approx((10e9 - n0) / (8 * 3 * 4096 * 32))
    # the structured model flags the row
    row = dict(QWEN3_30B, params_b=100.0, active_params_b=10.0, n_layers=32, d_model=4096, moe_experts=None,
               moe_top_k=None, moe_expert_ffn=None)
    assert bool(terms_of(row).moe_shape_estimated[0])


def contract_features(rows: list[dict]) -> pl.DataFrame:
    """Contract rows through the real normalisation and feature SQL with the shipped reference files."""
    features, reasons = configured.contract().build(pl.DataFrame(rows))
    assert reasons == [None] * len(rows)
    return features


BASE = {"gpu": "H100", "num_gpus": "8", "params_b": "30.5", "active_params_b": "3.3", "seq_len": "4096",
        "precision": "bf16"}


def test_machine_columns_default_from_the_gpu_system() -> None:
    features = contract_features([
        BASE, dict(BASE, gpu="GB200"), dict(BASE, gpu="L4"), dict(BASE, gpu="MI300X"),
        dict(BASE, scale_up_domain_gpus="1", scale_out_gbps_per_gpu="200"),
    ])
    got = features.select("scale_up_domain_gpus", "scale_out_gbps_per_gpu", "scale_up_gbps_per_gpu",
                          "scale_up_defaulted", "scale_out_defaulted").rows()
    # gpu_specs.csv: HGX H100 8 GPUs / 400 Gb/s, NVLink 450 GB/s; GB200 NVL72 72 / 400, 900 GB/s; L4 (PCIe)
    # 1 / 100, its PCIe 4.0 x16 31 GB/s; MI300X 8 / 400, xGMI 448 GB/s; the row's own machine wins
    assert got == [(8, 400.0, 450.0, True, True), (72, 400.0, 900.0, True, True), (1, 100.0, 31.0, True, True),
                   (8, 400.0, 448.0, True, True), (1, 200.0, 450.0, False, False)]


def test_moe_columns_of_a_row_override_the_reference() -> None:
    features = contract_features([
        dict(BASE, model_name="Qwen3-30B-A3B"),
        dict(BASE, model_name="Qwen3-30B-A3B", moe_top_k="4"),
        dict(BASE, model_name="some-new-moe", params_b="100", active_params_b="10"),
        dict(BASE, model_name="Llama-3-8B", params_b="8.03", active_params_b="8.03"),
    ])
    got = features.select("moe_experts", "moe_top_k", "moe_expert_ffn", "moe_shared_experts",
                          "moe_shape_source").rows()
    # Qwen3-30B-A3B from model_shapes.csv (128 experts, top-8, FFN 768, no shared); the row's moe_top_k 4 wins over
    # the reference's 8, the rest still from the reference; a model nobody describes: estimated; dense: none
    assert got == [(128, 8, 768, 0, "reference"), (128, 4, 768, 0, "row"), (None, None, None, None, "estimated"),
                   (None, None, None, None, None)]
    # the shape's attention width and layer count reach the structured model
    assert features.select("n_layers", "d_model", "n_heads", "head_dim").row(0) == (48, 2048, 32, 128)


def test_moe_rows_get_their_own_interval_quantile() -> None:
    from tasks.model.intervals import NormalisedConformal

    # held-out log residuals: 30 dense runs off by 0.1; 20 MoE runs, 10 off by 0.3 and 10 by 0.6
    residuals = np.array([0.1] * 30 + [0.3] * 10 + [0.6] * 10)
    flags = [""] * 30 + ["moe"] * 20
    conformal = NormalisedConformal.calibrate(residuals, flags, 0.8, min_flag_rows=20, default_widening=1.5,
                                              residual_floor=0.01)
    # scale: exp(mean log |r|): dense 0.1, MoE sqrt(0.3 x 0.6) = 0.42426 (widening 4.2426)
    assert conformal.widening()["moe"] == pytest.approx(4.2426, rel=1e-4)
    # scores |r| / scale: dense 30 x 1.0; MoE 10 x 0.7071 and 10 x 1.4142. MoE quantile: the ceil(21 x 0.8) = 17th
    # smallest of the 20 MoE scores = 1.4142; the pooled one (every other row): the 41st smallest of all 50 = 1.4142
    assert conformal.moe_quantile == pytest.approx(1.41421, rel=1e-5)
    assert conformal.quantile == pytest.approx(1.41421, rel=1e-5)
    # half-widths: dense 1.4142 x 0.1 = 0.14142; MoE 1.4142 x 0.42426 = 0.6 (every MoE residual inside)
    assert conformal.half_width(["", "moe"]) == pytest.approx([0.141421, 0.6], rel=1e-5)
    # with only 10 MoE residuals (fewer than min_flag_rows) there is no MoE quantile: the pooled one applies
    few = NormalisedConformal.calibrate(residuals[:40], flags[:40], 0.8, min_flag_rows=20, default_widening=1.5,
                                        residual_floor=0.01)
    assert few.moe_quantile is None


def test_flags_without_calibration_data_widen_once() -> None:
    from tasks.model.intervals import NormalisedConformal

    # 30 dense residuals of 0.1 and 2 MoE ones (fewer than min_flag_rows 20): "moe" and "moe_little_data" are
    # not fitted and take the default widening 1.5, which a row carrying both gets once (1.5, not 1.5 x 1.5 = 2.25)
    residuals = np.array([0.1] * 30 + [0.2, 0.2])
    flags = [""] * 30 + ["moe_little_data,moe"] * 2
    conformal = NormalisedConformal.calibrate(residuals, flags, 0.8, min_flag_rows=20, default_widening=1.5,
                                              residual_floor=0.01)
    # scale b0 = mean log |r| of all 32 rows after removing the unfitted widening: (30 ln 0.1 + 2 ln(0.2 / 1.5)) / 32
    b0 = (30 * math.log(0.1) + 2 * math.log(0.2 / 1.5)) / 32
    assert conformal.scale(["", "moe_little_data,moe", "moe"]) == pytest.approx(
        [math.exp(b0), 1.5 * math.exp(b0), 1.5 * math.exp(b0)], rel=1e-5)


def test_a_new_moe_model_is_calibrated_per_model_not_per_run() -> None:
    from tasks.model.intervals import cluster_conformal_quantile

    # model A has 4 held-out runs with scores 1, 2, 3, 4 (weight 1/4 each); models B, C, D, E one run each with 5, 6,
    # 7, 8 (weight 1): K = 5 models. At level 0.5 the rank is 0.5 x (5 + 1) = 3 in weights: cumulative weights in
    # score order 0.25, 0.5, 0.75, 1, 2, 3 -> the score 6. Per run (8 scores) it would be the ceil(9 x 0.5) = 5th
    # smallest, 5: model A's four runs would count as four models.
    scores = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    models = np.array(["A", "A", "A", "A", "B", "C", "D", "E"])
    assert cluster_conformal_quantile(scores, models, 0.5) == 6.0
    # level 0.8: rank 0.8 x 6 = 4.8, reached at the cumulative weight 5 of the largest score, 8
    assert cluster_conformal_quantile(scores, models, 0.8) == 8.0


def test_novelty_classes_get_their_own_quantile_with_a_fallback() -> None:
    from tasks.model.intervals import NormalisedConformal, novelty_classes

    assert list(novelty_classes(["", "moe", "moe,unseen_model", "unseen_gpu,moe,unseen_model"])) == [
        "", "moe_seen_model", "moe_new_model", "moe_new_model"]
    # held-out log residuals: 30 dense runs off by 0.1; 20 runs of a seen MoE model off by 0.1; 24 runs of new MoE
    # models: model A 20 runs off by 0.1, models B, C, D, E one run each off by 0.2, 0.3, 0.4, 0.5
    residuals = np.array([0.1] * 30 + [0.1] * 20 + [0.1] * 20 + [0.2, 0.3, 0.4, 0.5])
    flags = [""] * 50 + ["moe,unseen_model"] * 24
    flags[30:50] = ["moe"] * 20
    models = ["d"] * 30 + ["s1"] * 7 + ["s2"] * 7 + ["s3"] * 6 + ["A"] * 20 + ["B", "C", "D", "E"]
    conformal = NormalisedConformal.calibrate(residuals, flags, 0.8, min_flag_rows=20, default_widening=1.5,
                                              residual_floor=0.01, models=models)
    # scale: dense and "moe" rows 0.1 (b_moe = 0); "unseen_model" exp(mean log |r| of its 24 rows) / 0.1
    b_new = (20 * math.log(0.1) + math.log(0.2) + math.log(0.3) + math.log(0.4) + math.log(0.5)) / 24 - math.log(0.1)
    # rel 1e-5: scipy lsq_linear is iterative and stops within its tolerance, which BLAS builds reach in different
    # steps (1.5e-6 relative seen on this 2-core machine, where CI passed at 1e-6)
    assert conformal.widening()["unseen_model"] == pytest.approx(math.exp(b_new), rel=1e-5)
    scale_new = 0.1 * math.exp(b_new)
    # new-model class: 5 models, rank 0.8 x 6 = 4.8 in weights: A's 20 runs weigh 1 together, then B, C, D: 4; E: 5
    # -> E's score 0.5 / scale_new. The seen-model class: 20 scores of 1.0 -> 1.0. Per run it would have been the
    # ceil(25 x 0.8) = 20th smallest of 24: model A's 0.1 / scale_new
    assert dict(zip(("moe_new_model", "moe_seen_model"), conformal.class_quantiles, strict=True)) == pytest.approx(
        {"moe_new_model": 0.5 / scale_new, "moe_seen_model": 1.0}, rel=1e-5)  # lsq_linear: see above
    assert conformal.half_width(["moe,unseen_model", "moe", ""]) == pytest.approx([0.5, 0.1, 0.1])
    # a class whose residuals come from fewer than 3 models is not calibrated on its own: the seen-model runs all of
    # one model -> the quantile of all 44 MoE scores, the ceil(45 x 0.8) = 36th smallest: 20 of A's 0.1 / scale_new =
    # 0.819, then the seen model's 1.0
    one_model = NormalisedConformal.calibrate(residuals, flags, 0.8, min_flag_rows=20, default_widening=1.5,
                                              residual_floor=0.01, models=["d"] * 30 + ["s1"] * 20 + models[50:])
    assert 0.1 / scale_new == pytest.approx(0.8192, rel=1e-4)
    assert one_model.class_quantiles[1] == pytest.approx(one_model.moe_quantile) == pytest.approx(1.0, rel=1e-5)
    # with fewer than min_flag_rows (20) residuals of a class: all MoE residuals' quantile; fewer than 20 MoE
    # residuals too: the pooled q x default_widening 1.5
    few = NormalisedConformal.calibrate(residuals[:54], flags[:54], 0.8, min_flag_rows=20, default_widening=1.5,
                                        residual_floor=0.01, models=models[:54])
    assert few.class_quantiles[0] == pytest.approx(few.moe_quantile)
    fewer = NormalisedConformal.calibrate(residuals[:45], flags[:45], 0.8, min_flag_rows=20, default_widening=1.5,
                                          residual_floor=0.01, models=models[:45])
    assert fewer.moe_quantile is None
    assert fewer.class_quantiles == pytest.approx((1.5 * fewer.quantile, 1.5 * fewer.quantile))


# Training rows of the class-rule test: Qwen3-30B-A3B on 8 H100 (HGX, domain 8) at EP 8 in bf16 (inside the domain)
# and DeepSeek-V3 on 1024 H100 at EP 64 in bf16 (beyond it), as the bundled NeMo AutoModel runs.
_REGIME_TRAINING = [
    {"gpu": "H100-SXM", "num_gpus": 8, "params_b": 30.5, "active_params_b": 3.3, "precision": "bf16",
     "parallelism": "FSDP 8 EP 8", "scale_up_domain_gpus": 8, "moe_experts": 128, "framework": "NeMo AutoModel"},
    {"gpu": "H100-SXM", "num_gpus": 1024, "params_b": 671.0, "active_params_b": 37.0, "precision": "bf16",
     "parallelism": "FSDP 256 PP 4 EP 64", "scale_up_domain_gpus": 8, "moe_experts": 256,
     "framework": "NeMo AutoModel"},
    {"gpu": "H100-SXM", "num_gpus": 8, "params_b": 8.0, "active_params_b": 8.0, "precision": "bf16",
     "parallelism": "FSDP 8", "scale_up_domain_gpus": 8, "framework": "NeMo AutoModel"},
]


def _regime_row(**changes: object) -> dict:
    return {**_REGIME_TRAINING[0], **changes}


def test_a_seen_moe_model_is_seen_only_in_the_regime_it_was_trained_in() -> None:
    from tasks.model.intervals import novelty_classes
    from tasks.model.serving import TrainingCoverage, model_regimes

    train = pd.DataFrame(_REGIME_TRAINING)
    coverage = TrainingCoverage.of_training(train, min_moe_rows=1)
    assert coverage.regimes == ("30.5/3.3|16-bit|inside", "671.0/37.0|16-bit|beyond")
    qwen, dsv3 = {}, {"params_b": 671.0, "active_params_b": 37.0, "moe_experts": 256}
    table = [  # row -> (regime, expected class)
        # the trained regime on another GPU and framework: seen
        (_regime_row(gpu="B200", framework="torchtitan", **qwen), "30.5/3.3|16-bit|inside", "moe_seen_model"),
        # 16 GPUs, EP 8 inside a node, data parallel across nodes: same placement of the expert group, seen
        (_regime_row(num_gpus=16, parallelism="FSDP 16 EP 8"), "30.5/3.3|16-bit|inside", "moe_seen_model"),
        # EP 64 inside a 72-GPU NVL72 domain: inside, seen
        (_regime_row(gpu="GB200", num_gpus=72, parallelism="FSDP 72 EP 64", scale_up_domain_gpus=72),
         "30.5/3.3|16-bit|inside", "moe_seen_model"),
        # fp8 (the probe's precision) at EP 8: another precision family, new regime
        (_regime_row(precision="fp8"), "30.5/3.3|fp8/fp4|inside", "moe_new_model"),
        # the lead's probe: 16 H100 at EP 16 in fp8, the group leaves the node and the family is new
        (_regime_row(num_gpus=16, parallelism="FSDP 16 EP 16", precision="fp8"), "30.5/3.3|fp8/fp4|beyond",
         "moe_new_model"),
        # bf16 at EP 16 on 8-GPU nodes: only the placement is new
        (_regime_row(num_gpus=16, parallelism="FSDP 16 EP 16"), "30.5/3.3|16-bit|beyond", "moe_new_model"),
        # DeepSeek-V3 at EP 32 on 256 H100 in bf16: beyond the domain as trained, seen
        (_regime_row(num_gpus=256, parallelism="FSDP 64 PP 4 EP 32", **dsv3), "671.0/37.0|16-bit|beyond",
         "moe_seen_model"),
        # the lead's second probe: 256 B200 at EP 32 in fp8: fp8 is new
        (_regime_row(gpu="B200", num_gpus=256, parallelism="FSDP 64 PP 4 EP 32", precision="fp8", **dsv3),
         "671.0/37.0|fp8/fp4|beyond", "moe_new_model"),
        # on GB200 NVL72 at EP 64 in bf16: the all-to-all stays inside the domain, new
        (_regime_row(gpu="GB200", num_gpus=576, parallelism="FSDP 64 PP 9 EP 64", scale_up_domain_gpus=72,
                     **dsv3), "671.0/37.0|16-bit|inside", "moe_new_model"),
        # a model no training row has: new model (not also a new regime)
        (_regime_row(params_b=235.0, active_params_b=22.0), "235.0/22.0|16-bit|inside", "moe_new_model"),
        # dense rows have no regime and no class
        (_regime_row(params_b=70.0, active_params_b=70.0, precision="fp8"), "", ""),
    ]
    frame = pd.DataFrame([row for row, _, _ in table])
    assert model_regimes(frame) == [regime for _, regime, _ in table]
    flags = coverage.flags(frame, np.full(len(frame), True))
    assert list(novelty_classes(flags)) == [expected for _, _, expected in table]
    assert ["unseen_model_regime" in f for f in flags] == [False] * 3 + [True] * 3 + [False, True, True, False, False]
    assert "unseen_model" in flags[9].split(",") and "unseen_model_regime" not in flags[9]
    # a version trained before regimes were stored (no `regimes`, as unpickled): no row is a new regime, the
    # fp8 probe stays in the seen-model class as it was
    old = TrainingCoverage.of_training(train, min_moe_rows=1)
    del old.__dict__["regimes"]
    old_flags = old.flags(frame, np.full(len(frame), True))
    assert not any("unseen_model_regime" in f for f in old_flags)
    assert novelty_classes(old_flags)[4] == "moe_seen_model"


def test_a_version_trained_before_regimes_predicts_its_interval_as_it_did() -> None:
    """A registered version with 9 widenings (before "unseen_model_regime") and coverage without regimes: the fp8
    EP 16 row keeps the seen-model quantile; the same version with regimes stored gives it the new-model one."""
    import dataclasses

    from tasks.model.candidates import CandidateSpec, build_pipeline
    from tasks.model.evaluation import TargetSpec
    from tasks.model.intervals import IntervalOffsets, NormalisedConformal
    from tasks.model.serving import TokenEfficiencyModel, TrainingCoverage

    spec = CandidateSpec(name="physics_baseline", kind="constant_mfu")
    pipeline = build_pipeline(spec).fit(pd.DataFrame({"precision": ["bf16", "fp8"]}), np.log([0.4, 0.4]))
    # scale 0.05 inside, every one of the 9 old widenings 1; quantiles: new model 4, seen model 2, others 1
    conformal = NormalisedConformal(level=0.8, log_scale=math.log(0.05), log_widening=(0.0,) * 9, quantile=1.0,
                                    calibration_rows=100, moe_quantile=3.0, class_quantiles=(4.0, 2.0))
    train = pd.DataFrame(_REGIME_TRAINING).assign(precision=["bf16", "fp8", "bf16"])
    old = dataclasses.replace(TrainingCoverage.of_training(train, min_moe_rows=1), regimes=())
    model = TokenEfficiencyModel(pipeline=pipeline, spec=spec, target=TargetSpec(0.01, 1.0),
                                 intervals=IntervalOffsets(0.8, -0.1, 0.1, -0.2, 0.2), seen_gpus=("H100-SXM",),
                                 coverage=old, conformal=conformal)
    probe = pd.DataFrame([_regime_row(num_gpus=16, parallelism="FSDP 16 EP 16", precision="fp8",
                                      physics_bound_tokens_per_sec_per_gpu=10_000.0)])
    before = model.predict(probe)
    # seen-model class: half width 2 x 0.05 = 0.1 -> high / centre = exp(0.1)
    assert before["predicted_high"][0] / before["predicted_tokens_per_sec_per_gpu"][0] == pytest.approx(
        math.exp(0.1))
    assert before["extrapolation"][0] == "moe,ep_beyond_domain"
    stored = dataclasses.replace(old, regimes=TrainingCoverage.of_training(train, min_moe_rows=1).regimes)
    after = dataclasses.replace(model, coverage=stored).predict(probe)
    # new regime -> the new-model class: 4 x 0.05 = 0.2 (the 10th widening the version does not have is ignored)
    assert after["extrapolation"][0] == "moe,ep_beyond_domain,unseen_model_regime"
    assert after["predicted_high"][0] / after["predicted_tokens_per_sec_per_gpu"][0] == pytest.approx(math.exp(0.2))
    assert after["predicted_tokens_per_sec_per_gpu"][0] == before["predicted_tokens_per_sec_per_gpu"][0]


def test_a_new_moe_model_from_a_new_framework_widens_on_its_own() -> None:
    from tasks.model.intervals import FLAG_KINDS, NormalisedConformal, flag_matrix

    derived = FLAG_KINDS.index("moe_unseen_framework")
    # derived from the three flags together, never from fewer (a dense row of a new framework, a new MoE model of a
    # known framework, a known MoE model of a new framework)
    assert list(flag_matrix(["moe,unseen_framework,unseen_model", "unseen_framework", "moe,unseen_model",
                             "unseen_framework,moe", "unseen_gpu,unseen_framework,moe,unseen_model"])[:, derived]) == [
        1, 0, 0, 0, 1]
    # 20 rows inside the training data and 20 dense rows of a new framework off by 0.1, 20 new MoE models of a
    # known framework off by 0.1, 20 new MoE models of a new framework off by 0.4: b0 = log 0.1, "unseen_framework",
    # "moe" and "unseen_model" fit 1 (their rows are no harder than those inside), the derived kind 0.4 / 0.1 = 4
    residuals = np.array([0.1] * 60 + [0.4] * 20)
    flags = ([""] * 20 + ["unseen_framework"] * 20 + ["moe,unseen_model"] * 20
             + ["moe,unseen_framework,unseen_model"] * 20)
    conformal = NormalisedConformal.calibrate(residuals, flags, 0.8, min_flag_rows=20, default_widening=1.5,
                                              residual_floor=0.01)
    assert conformal.widening()["moe_unseen_framework"] == pytest.approx(4.0, rel=1e-5)
    assert conformal.scale(flags[-1:])[0] == pytest.approx(0.4, rel=1e-5)


def test_an_moe_run_of_a_framework_whose_moe_layer_is_unseen_is_flagged() -> None:
    from tasks.model.serving import TrainingCoverage

    # the training rows: two MoE runs on NeMo AutoModel, a dense run on MaxText
    train = pd.DataFrame([*_REGIME_TRAINING, _regime_row(params_b=8.0, active_params_b=8.0, framework="MaxText")])
    coverage = TrainingCoverage.of_training(train, min_moe_rows=1)
    assert coverage.moe_frameworks == ("nemo automodel",)
    rows = pd.DataFrame([
        _regime_row(),                                               # a known MoE layer: not flagged
        _regime_row(framework="MaxText"),                            # MaxText trained on, but only dense: flagged
        _regime_row(framework="torchtitan"),                         # a framework never trained on: flagged
        _regime_row(params_b=8.0, active_params_b=8.0, framework="torchtitan"),   # dense: not an MoE layer
    ])
    flags = [set(f.split(",")) for f in coverage.flags(rows, np.ones(len(rows), dtype=bool))]
    assert ["moe_new_framework" in f for f in flags] == [False, True, True, False]
    # a version trained before the flag existed knows no MoE frameworks and flags nothing
    before = TrainingCoverage(frameworks=coverage.frameworks, models=coverage.models, regimes=coverage.regimes)
    assert not any("moe_new_framework" in f for f in before.flags(rows, np.ones(len(rows), dtype=bool)))
