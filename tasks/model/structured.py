"""The structured (physics-first) throughput model: a training step's time per token as a sum of parts
computed from first principles, with a few named, bounded efficiencies learned from telemetry.

Time per token on one GPU (s per token of that GPU's share; tokens/s/GPU = 1 / time):

    t = k_fw x [ t_compute + t_overhead + t_optimizer + exposed(t_tp, tp_overlap) + exposed(t_dp, dp_overlap)
                 + exposed(t_all_to_all, a2a_overlap) ]
    t_compute = (t_linear + t_experts + t_attention) x (1 + pipeline bubble) x stage imbalance + t_memory
                + t_moe_memory
    exposed(t, o) = (1 - o) x t + max(0, o x t - t_compute)     (communication hides only behind compute)

- t_linear: the dense linear layers' FLOPs (attention projections, dense FFNs, shared experts, router,
  embeddings: 2 x (active params - routed expert params) x passes; forward 1 + backward 2, LoRA/QLoRA backward 1,
  +1 forward when every layer is recomputed) at the peak of the precision the recipe runs them in: fp8/fp4
  recipes run their share at the fp8/fp4 ceiling x `matmul_efficiency` x `lowp_matmul_ratio`, the rest at the
  16-bit ceiling x `matmul_efficiency`.
- power limit: every matmul ceiling (linear layers, experts, attention) x (tdp_w / the board power of the part the
  ceiling was measured on) ** `power_clock_exponent`, when that ratio is below 1 (the same die at a lower limit,
  e.g. H100 at 500 W against the 700 W SXM part's MAMF, sustains a lower clock; dynamic power ~ C V^2 f with V ~ f
  gives the prior 1/3). Memory-bound parts keep their bandwidth.
- t_experts (MoE): routed experts, 2 x top_k x ffn_matrices x d_model x expert_ffn x MoE layers x passes FLOPs,
  at the same peaks, times the grouped-GEMM efficiency S / (S + `grouped_gemm_half_size`), S = tokens per expert
  per micro-step x expert FFN columns per GPU (tokens per expert = tokens entering the MoE on a GPU per micro-step
  x top_k x EP / experts): fine-grained experts on few tokens run small, slow GEMMs. With EP > 1, x the load of
  the most loaded of ep ranks over the mean, 1 + sqrt(2 ln ep / local experts) x sqrt(`expert_load_cv`^2 + 1 /
  tokens per expert) (a Gaussian maximum; a rank's load CV is one expert's over sqrt(its experts)).
- t_attention: QK^T and AV, 2 x seq x heads x head_dim x attention layers FLOPs per token forward (causal: half
  a square), x3 for forward + backward, +1 with any recomputation, at the 16-bit ceiling x `attention_efficiency`.
- t_memory: elementwise / norm / activation traffic, `activation_bytes` per layer per d_model per token (plus
  `quantisation_bytes` for fp8/fp4 recipes), against HBM bandwidth; never at a low-precision peak.
- t_moe_memory: permutation, unpermutation and routing, `moe_permute_bytes` per routed copy per d_model per MoE
  layer per token, against HBM bandwidth: a low-precision recipe speeds up only the GEMMs.
- t_overhead: `layer_overhead_us` per layer per micro-step, spread over the micro-batch's tokens (x tp x cp).
- t_optimizer: `optimizer_bytes_per_param` x parameters held per GPU, once per step, over HBM bandwidth.
- t_tp: 4 all-reduces of d_model x 2 bytes per layer per token, ring 2(t-1)/t, plus (MoE with expert tensor
  parallelism) an all-gather and a reduce-scatter of the routed copies forward and backward, 4 x top_k x d_model x
  2 bytes x (etp-1) per MoE layer; over the scale-up link when the group fits the domain, else the network.
- t_dp: data-parallel / FSDP traffic per step: parameters held per model-parallel rank x (the gradients reduced at
  `grad_reduce_bytes_per_param`, 4: fp32, + the weights gathered at `gather_bytes_per_param`, 2: bf16, once per
  step; FSDP per micro-step: 2 gathers + 1 reduce-scatter), ring (n-1)/n. Dense weights over the
  data-parallel group (all GPUs / (tp x pp)); routed experts over the expert-data-parallel group (all GPUs /
  (ep x etp x pp)). Over the scale-up link when the whole run fits one domain, else over the network
  (`scale_out_gbps_per_gpu` / 8 GB/s x `scale_out_efficiency`). A run that names no parallelism and whose
  weights and optimizer state (LoRA/QLoRA: the frozen base, `lora_base_bytes_per_param` /
  `qlora_base_bytes_per_param`, and the adapters' state) cannot fit one GPU is priced as FSDP.
- t_all_to_all (MoE, EP > 1): dispatch + combine, forward + backward (+ forward again with full recomputation),
  top_k x d_model x `a2a_bytes_per_element` per MoE layer per token, x (ep-1)/ep. The EP group spans ep x etp
  consecutive GPUs: its peers inside the scale-up domain are reached at the scale-up bandwidth x
  `a2a_scale_up_efficiency`, the rest over the network x `a2a_scale_out_efficiency`. Each of those all-to-alls
  is also a call of fixed cost (an alpha-beta collective: latency + bytes / bandwidth): `a2a_call_us` per call,
  (4, + 2 with full recomputation) calls per MoE layer per micro-step, spread over the micro-step's tokens on a
  GPU (micro_batch x seq / (tp x cp)). Besides the network latency it holds the host synchronisation of a
  dropless dispatch, which must learn how many tokens each rank receives before it can size its buffers (the GPU
  then waits for the host to launch what follows): small micro-steps of fine-grained, many-layer MoE models pay
  it most (GPT-OSS-20B at 1,024 tokens per GPU per step).
- pipeline bubble: (pp - 1) / (virtual stages x micro-batches) (Narayanan et al. 2021).
- stage imbalance: a pipeline runs at its slowest rank. The layers are split with the embedding and the output
  head + loss counted as one layer slot each (Megatron's account-for-embedding/loss-in-pipeline-split,
  torchtitan's stage weights): a rank holds (layers + 2) / pp slots and the last one the head, 2 x vocab x d_model
  FLOPs per pass (vocab: the model's, else `estimate_vocab`), h layers' worth: max(slots, slots - 1 + h) over
  the mean rank's (layers + h) / pp. Deep pipelines of large-vocabulary models (Qwen3-235B at PP 32: x 1.42) wait
  for their last rank.
- k_fw: a per-framework factor, ridge-shrunk towards 1 by the distinct models the framework ran (not its runs); a
  framework the training data does not have gets the pooled value.

Fitted with scipy.optimize.least_squares on log(predicted time) - log(measured time) (robust soft-L1
loss), every efficiency bounded, ridge priors on the low-precision ratio, the grouped-GEMM half size and the
all-to-all overlap (config/models.toml [structured]). The model shape comes from the row (n_layers, d_model),
else data/reference/model_shapes.csv by model_name, else from the parameter count: N = 12 L d^2 with d =
`shape_aspect_ratio` x L. An MoE model with neither its own nor a reference MoE shape gets one estimated from
total and active parameters (`estimated_moe_shape`), and its prediction says so. The machine (scale-up domain,
its bandwidth, the network per GPU) comes from the row, else from the GPU system's defaults in gpu_specs.csv.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares
from sklearn.base import BaseEstimator, RegressorMixin

from tasks.contract.parallelism import Layout, parse_parallelism
from tasks.model.design import PHYSICS_BOUND, model_keys, moe_mask

# Feature-row columns the structured model reads (besides the physics bound, to return log MFU).
STRUCTURED_NUMERIC = (
    "num_gpus", "params_b", "active_params_b", "seq_len", "micro_batch", "global_batch_tokens",
    "peak_tflops", "peak_16bit_tflops", "mem_bandwidth_tbps", "intra_node_bw_gbps_unidir", "n_layers", "d_model",
    "matmul_ceiling_16bit", "matmul_ceiling_lowp", "matmul_ceiling_power_w", "tdp_w", "gpu_memory_gb", "n_heads",
    "head_dim", "attention_layers", "vocab",
    "ffn_matrices", "moe_experts", "moe_top_k", "moe_expert_ffn", "moe_shared_experts", "moe_dense_layers",
    "scale_up_domain_gpus", "scale_up_gbps_per_gpu", "scale_out_gbps_per_gpu",
)
STRUCTURED_CATEGORICAL = ("precision", "precision_recipe", "workload", "activation_checkpointing", "framework",
                          "parallelism", "gpu")

LOW_PRECISION = ("fp8", "fp4")

# name -> (initial value, lower bound, upper bound, unit) of the learned parameters
PARAMETERS: dict[str, tuple[float, float, float, str]] = {
    "matmul_efficiency": (0.6, 0.2, 1.0, "fraction of the 16-bit matmul ceiling (MAMF) reached by linear layers"),
    "lowp_matmul_ratio": (0.85, 0.3, 1.0, "fp8/fp4 linear-layer efficiency relative to the 16-bit one"),
    # starts at its prior, where it stays without a low-precision MoE run
    "lowp_expert_ratio": (0.72, 0.3, 1.0,
                          "fp8/fp4 grouped-GEMM (routed experts) efficiency relative to the 16-bit one"),
    # causal FLOPs counted as half a square (what FlashAttention computes); learned, not assumed
    "attention_efficiency": (0.4, 0.2, 1.0, "fraction of the 16-bit matmul ceiling (MAMF) reached by attention"),
    "activation_bytes": (40.0, 0.0, 400.0, "bytes per layer per d_model per token (elementwise/norm traffic)"),
    "quantisation_bytes": (20.0, 0.0, 400.0, "extra bytes per layer per d_model per token in fp8/fp4 recipes"),
    "grouped_gemm_half_size": (1.0e6, 1.0e4, 1.0e8,
                               "tokens per expert x expert FFN columns at which grouped GEMMs run at half speed"),
    "moe_permute_bytes": (16.0, 0.0, 200.0,
                          "bytes per routed copy per d_model per MoE layer per token (permute, unpermute, routing)"),
    "layer_overhead_us": (20.0, 0.0, 100.0, "microseconds per layer per micro-batch (launches, syncs)"),
    "a2a_call_us": (50.0, 0.0, 2000.0,
                    "microseconds per MoE all-to-all call (latency, host sync of a dropless dispatch)"),
    "expert_load_cv": (0.3, 0.0, 2.0,
                       "coefficient of variation of one expert's routed tokens per micro-step (router imbalance)"),
    "tp_overlap": (0.5, 0.0, 1.0, "share of tensor-parallel communication hidden behind compute"),
    "dp_overlap": (0.8, 0.0, 1.0, "share of data-parallel / FSDP communication hidden behind compute"),
    "a2a_overlap": (0.3, 0.0, 0.9, "share of MoE all-to-all communication hidden behind compute"),
    # starts at its physics prior (1/3: dynamic power ~ C V^2 f with V ~ f), where it stays when no row is capped
    "power_clock_exponent": (1.0 / 3.0, 0.05, 1.0,
                             "sustained matmul clock ~ (power limit / power of the MAMF part) ** this, below 1"),
}
# learned parameter -> (prior value, config key of its penalty weight): ridge on log(value / prior)
PRIORS: dict[str, tuple[str, str]] = {
    "lowp_matmul_ratio": ("lowp_ratio_prior", "lowp_ratio_weight"),
    "lowp_expert_ratio": ("lowp_expert_ratio_prior", "lowp_expert_ratio_weight"),
    "grouped_gemm_half_size": ("grouped_gemm_half_size_prior", "grouped_gemm_prior_weight"),
    "a2a_overlap": ("a2a_overlap_prior", "a2a_overlap_prior_weight"),
    "moe_permute_bytes": ("moe_permute_bytes_prior", "moe_permute_prior_weight"),
    "power_clock_exponent": ("power_clock_exponent_prior", "power_clock_prior_weight"),
}

# config keys only a fit reads (the priors and their weights, the framework factors' ridge and cap): a stored
# version whose config predates one of them still predicts
FIT_ONLY = frozenset({key for pair in PRIORS.values() for key in pair} | {"framework_ridge", "max_framework_factor"})
# physics constants added after versions were registered: such a version predicts with the dataclass default
DEFAULTED = frozenset({"lora_trainable_fraction", "qlora_dequant_bytes_per_param", "lora_base_bytes_per_param",
                       "qlora_base_bytes_per_param", "gather_bytes_per_param", "grad_reduce_bytes_per_param"})


def framework_family(text: str | None, families: Mapping[str, str]) -> str:
    """The framework family of a free-form framework text: the first configured substring it contains
    (config/models.toml [structured.frameworks]), else "other"."""
    if not isinstance(text, str) or not text.strip():
        return "unknown"
    lowered = text.lower()
    for needle, family in families.items():
        if needle.lower() in lowered:
            return family
    return "other"


def estimated_shape(active_params_b: np.ndarray, aspect_ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """(n_layers, d_model) of a dense transformer with N = 12 L d^2 and d = aspect_ratio x L."""
    n = active_params_b * 1e9
    layers = (n / (12.0 * aspect_ratio**2)) ** (1.0 / 3.0)
    width: np.ndarray = aspect_ratio * layers
    return layers, width


@dataclass(frozen=True)
class MoeShape:
    experts: np.ndarray      # routed experts per MoE layer
    top_k: np.ndarray        # routed experts per token
    expert_ffn: np.ndarray   # FFN size of one expert
    moe_layers: np.ndarray   # layers with experts


def estimated_moe_shape(total: np.ndarray, active: np.ndarray, layers: np.ndarray, width: np.ndarray,
                        matrices: np.ndarray, cfg: StructuredConfig) -> MoeShape:
    """An MoE shape from total and active parameters when neither the row nor the reference has one.

    Parameters outside the routed experts are taken as the attention projections plus embedding and head,
    N0 = 4 d^2 L + 2 V d (V = `estimate_vocab`), at most half the active ones. Then experts / top_k = (total -
    N0) / (active - N0); top_k = `estimate_top_k_coarse` (2) when that ratio is at most
    `estimate_fine_grained_ratio`, else `estimate_top_k_fine` (8); experts = top_k x ratio; expert FFN = (active
    - N0) / (top_k x matrices x d x L); every layer has experts."""
    n0 = np.minimum(4.0 * width**2 * layers + 2.0 * cfg.estimate_vocab * width, 0.5 * active)
    ratio = np.maximum((total - n0) / np.maximum(active - n0, 1.0), 1.0)
    top_k = np.where(ratio <= cfg.estimate_fine_grained_ratio, cfg.estimate_top_k_coarse, cfg.estimate_top_k_fine)
    experts = np.maximum(np.round(top_k * ratio), top_k)
    expert_ffn = (active - n0) / (top_k * matrices * width * layers)
    return MoeShape(experts=experts, top_k=top_k, expert_ffn=expert_ffn, moe_layers=layers)


@dataclass(frozen=True)
class StructuredConfig:
    """Fixed physics constants, every one from config/models.toml [structured] (the one place their values live);
    the efficiencies are learned."""

    optimizer_bytes_per_param: float   # Adam: fp32 master weight, m, v read + written, bf16 copy
    scale_out_efficiency: float   # bus bandwidth of ring collectives / network line rate
    a2a_scale_up_efficiency: float   # all-to-all bandwidth / scale-up (NVLink, xGMI) line rate
    a2a_scale_out_efficiency: float   # all-to-all bandwidth / network line rate
    a2a_bytes_per_element: float   # bytes per hidden-state element dispatched (bf16)
    default_scale_up_domain_gpus: float
    default_scale_out_gbps_per_gpu: float   # Gb/s when neither the row nor the GPU system says
    default_global_batch_tokens: float
    default_micro_batch_tokens: float   # tokens per micro-step when a run gives no micro_batch
    default_ffn_matrices: float   # gated FFN (SwiGLU): gate, up, down
    shape_aspect_ratio: float
    estimate_vocab: float
    estimate_fine_grained_ratio: float
    estimate_top_k_coarse: float
    estimate_top_k_fine: float
    fsdp_memory_fraction: float   # share of GPU memory the unsharded weights + optimizer may fill
    default_matmul_ceiling: float   # measured max achievable matmul / peak of a GPU without a MAMF row
    framework_ridge: float   # penalty weight on log framework factors (shrinks towards the pool)
    lowp_ratio_prior: float   # prior of lowp_matmul_ratio when no fp8/fp4 run is in the data
    lowp_ratio_weight: float   # its penalty weight (data with fp8 runs outweighs it)
    lowp_expert_ratio_prior: float   # fp8/fp4 grouped-GEMM efficiency relative to 16-bit (quantised routed copies)
    lowp_expert_ratio_weight: float
    grouped_gemm_half_size_prior: float
    grouped_gemm_prior_weight: float
    a2a_overlap_prior: float
    a2a_overlap_prior_weight: float
    moe_permute_bytes_prior: float
    moe_permute_prior_weight: float
    power_clock_exponent_prior: float   # sustained clock ~ power ** this (dynamic power ~ f^3)
    power_clock_prior_weight: float
    max_framework_factor: float
    frameworks: tuple[tuple[str, str], ...] = ()
    low_precision_share: tuple[tuple[str, float], ...] = ()   # recipe -> share of linear FLOPs in fp8/fp4
    # LoRA / QLoRA (a version registered before these existed gets these values)
    lora_trainable_fraction: float = 0.002   # adapter parameters / base parameters (rank-16 attention adapters)
    qlora_dequant_bytes_per_param: float = 4.5   # per weight pass: read 0.5 B (NF4) + write and read a 2-byte copy
    lora_base_bytes_per_param: float = 2.0   # memory of LoRA's frozen base per parameter (bf16 weights, no state)
    qlora_base_bytes_per_param: float = 0.52   # QLoRA's: NF4 0.5 B + its double-quantised scales
    gather_bytes_per_param: float = 2.0   # B per weight all-gathered (FSDP, distributed optimizer): bf16
    grad_reduce_bytes_per_param: float = 4.0   # B per gradient reduce-scattered / all-reduced: fp32

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> StructuredConfig:
        """From config/models.toml [structured] (as loaded, or as stored in a registered version's spec); a
        constant it lacks is a KeyError naming it."""
        known = {f for f in cls.__dataclass_fields__ if f not in ("frameworks", "low_precision_share")}
        missing = sorted(known - set(cfg) - FIT_ONLY - DEFAULTED)
        if missing:
            raise KeyError(f"config/models.toml [structured] lacks {', '.join(missing)}")
        # a version registered before a prior existed still predicts (priors only steer a fit: fit checks them)
        values = {k: math.nan for k in FIT_ONLY} | {k: v for k, v in cfg.items() if k in known}
        return cls(**values, frameworks=tuple((str(k), str(v)) for k, v in cfg.get("frameworks", {}).items()),
                   low_precision_share=tuple((str(k), float(v))
                                             for k, v in cfg.get("low_precision_share", {}).items()))

    def to_dict(self) -> dict[str, Any]:
        out = {f: getattr(self, f) for f in self.__dataclass_fields__
               if f not in ("frameworks", "low_precision_share")}
        out["frameworks"] = dict(self.frameworks)
        out["low_precision_share"] = dict(self.low_precision_share)
        return out


@dataclass
class Terms:
    """Per-row ingredients (arrays), independent of the learned parameters."""

    linear_flops: np.ndarray       # FLOPs per token on one GPU's share (dense linear layers, incl. recompute)
    expert_flops: np.ndarray       # FLOPs per token (routed experts, incl. recompute; 0 for dense models)
    expert_gemm_size: np.ndarray   # tokens per expert per micro-step x expert FFN columns per GPU (inf: dense)
    imbalance_units: np.ndarray    # sqrt(2 ln ep / local experts) (0: no EP): x load CV = slowest rank's excess
    sampling_cv: np.ndarray        # 1 / sqrt(tokens per expert per micro-step): multinomial noise of the load
    attention_flops: np.ndarray    # FLOPs per token (causal attention, incl. recompute)
    linear_peak: np.ndarray        # FLOP/s: the achievable matmul peak the linear layers run at
    lowp_share: np.ndarray         # share of the linear FLOPs at that (fp8/fp4) peak; the rest at 16 bit
    peak_16bit: np.ndarray         # FLOP/s: the achievable 16-bit matmul peak (attention)
    power_ratio: np.ndarray        # power limit / power of the part the MAMF was measured on, at most 1 (1: unknown)
    bandwidth: np.ndarray          # B/s
    layer_width: np.ndarray        # n_layers x d_model (per token activation scale)
    routed_width: np.ndarray       # top_k x d_model x MoE layers (per token routed hidden states; 0 dense)
    low_precision: np.ndarray      # bool
    moe: np.ndarray                # bool
    bubble: np.ndarray             # pipeline bubble fraction
    stage_imbalance: np.ndarray    # the slowest pipeline rank's matmul work over the mean rank's (1: no pipeline)
    optimizer_s: np.ndarray        # s per token
    dequant_s: np.ndarray          # s per token: QLoRA's 4-bit base weights dequantised each weight pass (0 else)
    tp_s: np.ndarray               # s per token
    dp_s: np.ndarray               # s per token
    a2a_s: np.ndarray              # s per token
    overhead_units: np.ndarray     # layers x tp x cp / tokens per micro-batch (x overhead = s per token)
    a2a_call_units: np.ndarray     # all-to-all calls per token per GPU (MoE with EP > 1; 0 else) (x a2a_call_us)
    framework: np.ndarray          # framework family per row
    shape_estimated: np.ndarray    # bool: layers x width from the parameter count
    moe_shape_estimated: np.ndarray  # bool: MoE shape from total and active parameters


def _num(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype="float64")


def _text(frame: pd.DataFrame, name: str) -> list[str | None]:
    if name not in frame.columns:
        return [None] * len(frame)
    return [None if (v is None or (isinstance(v, float) and math.isnan(v))) else str(v) for v in frame[name]]


def _given(values: np.ndarray, default: np.ndarray | float) -> np.ndarray:
    return np.where(np.isfinite(values) & (values > 0), values, default)


def collective_seconds(bytes_: np.ndarray, peers: np.ndarray, stride: np.ndarray, domain: np.ndarray,
                       scale_up_bytes_per_s: np.ndarray, scale_out_bytes_per_s: np.ndarray) -> np.ndarray:
    """Seconds for a ring collective (all-reduce, all-gather, reduce-scatter) moving `bytes_` per GPU over a
    group of `peers` GPUs placed `stride` GPUs apart. Inside one scale-up domain: the scale-up bandwidth. Across
    domains, NCCL runs one ring per NIC and each ring leaves a domain once, so a domain's members of the group
    share its network: per GPU min(scale-up, members per domain x network per GPU) (8 GPUs of an HGX node with
    400 Gb/s each reach ~360 GB/s; a 1-GPU VM only its own NIC)."""
    inside = peers * stride <= domain
    members = np.clip(np.floor(domain / stride), 1.0, peers)
    across = np.minimum(scale_up_bytes_per_s, members * scale_out_bytes_per_s)
    return np.where(peers > 1, bytes_ / np.where(inside, scale_up_bytes_per_s, across), 0.0)


def all_to_all_seconds(bytes_: np.ndarray, ep: np.ndarray, etp: np.ndarray, domain: np.ndarray,
                       scale_up_bytes_per_s: np.ndarray, scale_out_bytes_per_s: np.ndarray) -> np.ndarray:
    """Seconds for an all-to-all of `bytes_` per GPU (already x (ep-1)/ep) over `ep` peers spaced `etp` GPUs
    apart: the peers inside the scale-up domain (domain / etp of them, the GPU itself included) are reached
    over the scale-up link, the others over the network; the two shares add."""
    peers_inside = np.clip(np.floor(domain / etp), 1.0, ep)
    inside = np.where(ep > 1, (peers_inside - 1.0) / np.maximum(ep - 1.0, 1.0), 0.0)
    values: np.ndarray = bytes_ * (inside / scale_up_bytes_per_s + (1.0 - inside) / scale_out_bytes_per_s)
    return values


def expert_tensor_parallel_size(layouts: list[Layout], gpus: np.ndarray, ep: np.ndarray) -> np.ndarray:
    """ETP of each run, at most gpus / ep: as named; else, with EDP named, what the GPUs leave for it (Megatron:
    gpus = ETP x EP x EDP x PP, so 'TP 2 EP 8 EDP 32' on 256 GPUs is ETP 1); else TP (Megatron's default)."""
    etp = np.array([lay.etp or (gpus_ / (e * lay.edp * lay.pp) if lay.edp else lay.tp)
                    for lay, gpus_, e in zip(layouts, gpus, ep, strict=True)], dtype="float64")
    values: np.ndarray = np.minimum(np.maximum(np.floor(etp), 1.0), np.maximum(gpus / ep, 1.0))
    return values


def expert_parallel_size(ep: np.ndarray, model_parallel: np.ndarray, gpus: np.ndarray, fsdp_without_ep: np.ndarray,
                         experts: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """EP of a run: as named (at most the run's GPUs). An MoE run with FSDP and no EP named: inside one scale-up
    domain, EP 1 (the frameworks' default: FSDP shards the experts too and gathers them over NVLink/xGMI); beyond
    it, expert-parallel along its FSDP group, at most one expert per GPU (gathering every expert's weights each
    micro-step over the network is not how such runs are set up)."""
    values: np.ndarray = np.where(fsdp_without_ep & (ep == 1) & (gpus > domain),
                                  np.minimum(np.maximum(gpus / model_parallel, 1.0), experts), ep)
    return values


def expert_parallel_leaves_domain(frame: pd.DataFrame, default_domain: float = 1.0) -> np.ndarray:
    """Per row: True for an MoE run whose expert-parallel group (EP x expert TP GPUs, the layout read as
    compute_terms reads it) is larger than its scale-up domain, i.e. whose all-to-all crosses the network."""
    gpus = np.nan_to_num(_num(frame, "num_gpus"), nan=1.0).clip(min=1.0)
    moe = moe_mask(_num(frame, "params_b"), _num(frame, "active_params_b"))
    texts = _text(frame, "parallelism")
    layouts = [parse_parallelism(t) for t in texts]
    ep_named = np.array([lay.ep_named for lay in layouts])
    model_parallel = np.array([lay.tp * lay.pp * lay.cp for lay in layouts], dtype="float64")
    fsdp = np.array([lay.fsdp for lay in layouts])
    experts = _given(_num(frame, "moe_experts"), np.inf)
    domain = _given(_num(frame, "scale_up_domain_gpus"), default_domain)
    ep = expert_parallel_size(np.minimum(np.array([lay.ep for lay in layouts], dtype="float64"), gpus),
                              model_parallel, gpus, moe & fsdp & ~ep_named, experts, domain)
    etp = expert_tensor_parallel_size(layouts, gpus, ep)
    values: np.ndarray = moe & (ep > 1) & (ep * etp > domain)
    return values


@dataclass(frozen=True)
class Shape:
    """The transformer as a step sees it (the row's / reference shape, else estimated from active parameters)."""

    layers: np.ndarray            # transformer layers
    width: np.ndarray             # d_model
    attention_width: np.ndarray   # heads x head_dim (Qwen3, GLM, MLA differ from d_model)
    attention_layers: np.ndarray  # layers that attend fully (hybrid and sliding-window models have fewer)
    matrices: np.ndarray          # FFN matrices: 3 gated (SwiGLU), 2 plain
    estimated: np.ndarray         # bool: layers x width from the parameter count


def model_shape(frame: pd.DataFrame, active: np.ndarray, cfg: StructuredConfig) -> Shape:
    """Layers, width and attention of each row's model."""
    layers, width = _num(frame, "n_layers"), _num(frame, "d_model")
    est_layers, est_width = estimated_shape(active / 1e9, cfg.shape_aspect_ratio)
    estimated = ~(np.isfinite(layers) & np.isfinite(width) & (layers > 0) & (width > 0))
    layers = np.where(estimated, est_layers, layers)
    width = np.where(estimated, est_width, width)
    attention_width = np.where(estimated, width, _given(_num(frame, "n_heads") * _num(frame, "head_dim"), width))
    attention_layers = np.where(estimated, layers, _given(_num(frame, "attention_layers"), layers))
    return Shape(layers=layers, width=width, attention_width=attention_width, attention_layers=attention_layers,
                 matrices=_given(_num(frame, "ffn_matrices"), cfg.default_ffn_matrices), estimated=estimated)


@dataclass(frozen=True)
class MatmulPeaks:
    linear_peak: np.ndarray   # FLOP/s: achievable matmul peak of the run's precision (peak x MAMF share)
    lowp_share: np.ndarray    # share of the linear FLOPs an fp8/fp4 recipe runs at that peak
    peak_16bit: np.ndarray    # FLOP/s: achievable 16-bit matmul peak (attention, the rest of a recipe)
    power_ratio: np.ndarray   # board power limit / power of the part the MAMF was measured on, at most 1


def matmul_peaks(frame: pd.DataFrame, low: np.ndarray, cfg: StructuredConfig) -> MatmulPeaks:
    """The GPU's achievable matmul peaks: the datasheet peak x the measured ceiling (MAMF / peak); efficiencies are
    learned relative to them."""
    peak = _num(frame, "peak_tflops") * 1e12
    peak16 = _num(frame, "peak_16bit_tflops") * 1e12
    peak16 = np.where(np.isfinite(peak16), peak16, peak)
    ceiling16 = np.nan_to_num(_num(frame, "matmul_ceiling_16bit"), nan=cfg.default_matmul_ceiling)
    ceiling_low = _num(frame, "matmul_ceiling_lowp")
    ceiling_low = np.where(np.isfinite(ceiling_low), ceiling_low, ceiling16)
    shares = dict(cfg.low_precision_share)
    # a GPU run below the power its matmul ceiling was measured at (the same die at a lower board limit, e.g. H100
    # at 500 W vs the 700 W SXM part) sustains a lower clock: the ratio, capped at 1 (a higher limit buys nothing)
    power_ratio = np.clip(np.nan_to_num(_num(frame, "tdp_w") / _num(frame, "matmul_ceiling_power_w"), nan=1.0),
                          1e-3, 1.0)
    return MatmulPeaks(
        linear_peak=np.where(low, peak * ceiling_low, peak16 * ceiling16),
        lowp_share=np.array([shares.get(r or "", 1.0) for r in _text(frame, "precision_recipe")]) * low,
        peak_16bit=peak16 * ceiling16, power_ratio=power_ratio)


@dataclass(frozen=True)
class Machine:
    domain: np.ndarray      # GPUs sharing the scale-up link (NVLink / xGMI domain)
    scale_up: np.ndarray    # B/s per GPU per direction inside the domain
    scale_out: np.ndarray   # B/s per GPU per direction over the network (line rate)


def machine(frame: pd.DataFrame, cfg: StructuredConfig) -> Machine:
    """The row's machine, else the GPU system's default (features), else the configured default."""
    domain = _given(_num(frame, "scale_up_domain_gpus"), cfg.default_scale_up_domain_gpus)
    scale_out = _given(_num(frame, "scale_out_gbps_per_gpu"), cfg.default_scale_out_gbps_per_gpu) / 8.0 * 1e9
    scale_up = _given(_num(frame, "scale_up_gbps_per_gpu"), _num(frame, "intra_node_bw_gbps_unidir")) * 1e9
    scale_up = np.where(np.isfinite(scale_up) & (domain > 1), scale_up, scale_out)
    return Machine(domain=domain, scale_up=scale_up, scale_out=scale_out)


@dataclass(frozen=True)
class ParallelLayout:
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray             # as named, at most the run's GPUs (MoE runs: see expert_parallel_size)
    etp: np.ndarray            # expert tensor parallelism (Megatron's default: the tensor-parallel size)
    vp: np.ndarray             # virtual pipeline stages
    fsdp: np.ndarray           # bool: FSDP / ZeRO-3 named
    given: np.ndarray          # bool: the row names a layout at all
    ep_named: np.ndarray       # bool: the row names an EP size
    fsdp_across: np.ndarray    # FSDP GPUs named as spanning nodes, one per node (0: the FSDP group is all dp)
    grad_accum: np.ndarray     # gradient-accumulation steps named (NaN: not named)
    model_parallel: np.ndarray  # tp x pp x cp GPUs, at most the run's
    dp: np.ndarray             # data-parallel replicas of the dense weights


def parallel_layout(frame: pd.DataFrame, gpus: np.ndarray) -> ParallelLayout:
    texts = _text(frame, "parallelism")
    layouts = [parse_parallelism(t) for t in texts]

    def sizes(name: str) -> np.ndarray:
        return np.array([getattr(lay, name) for lay in layouts], dtype="float64")

    tp, pp, cp, ep, vp = sizes("tp"), sizes("pp"), sizes("cp"), sizes("ep"), sizes("vp")
    # a layout asking for more GPUs than the run has (e.g. "PP=41" on 8 GPUs) is not believed: no pipeline
    pp = np.where(tp * pp * cp > gpus, 1.0, pp)
    ep = np.minimum(ep, gpus)
    etp = expert_tensor_parallel_size(layouts, gpus, ep)
    model_parallel = np.minimum(tp * pp * cp, gpus)
    return ParallelLayout(
        tp=tp, pp=pp, cp=cp, ep=ep, etp=etp, vp=vp, fsdp=np.array([lay.fsdp for lay in layouts]),
        given=np.array([lay.given for lay in layouts]),
        ep_named=np.array([lay.ep_named for lay in layouts]),
        fsdp_across=np.minimum(sizes("fsdp_across"), gpus),
        grad_accum=np.array([lay.grad_accum or np.nan for lay in layouts], dtype="float64"),
        model_parallel=model_parallel, dp=np.maximum(gpus / model_parallel, 1.0))


@dataclass(frozen=True)
class MoeParameters:
    moe: np.ndarray               # bool: fewer active than total parameters
    experts: np.ndarray           # routed experts per MoE layer
    top_k: np.ndarray             # routed experts per token
    expert_ffn: np.ndarray        # FFN size of one expert
    moe_layers: np.ndarray        # layers with experts
    routed_active: np.ndarray     # parameters of the routed experts a token runs (0: dense)
    routed_total: np.ndarray      # parameters of all routed experts (0: dense)
    dense_active: np.ndarray      # what every token runs: attention, dense layers, shared experts, router, embeddings
    dense_total: np.ndarray       # every parameter outside the routed experts
    shape_estimated: np.ndarray   # bool: MoE shape from total and active parameters


def moe_parameters(frame: pd.DataFrame, params: np.ndarray, active: np.ndarray, shape: Shape,
                   cfg: StructuredConfig) -> MoeParameters:
    """Routed-expert and dense parameter counts: the row's / reference MoE shape, else estimated from total and
    active parameters (shared experts and the router are part of the active parameters outside the routed
    experts)."""
    moe = moe_mask(params, active)
    experts, top_k = _num(frame, "moe_experts"), _num(frame, "moe_top_k")
    expert_ffn = _num(frame, "moe_expert_ffn")
    dense_layers = np.nan_to_num(_num(frame, "moe_dense_layers"), nan=0.0)
    known = np.isfinite(experts) & np.isfinite(top_k) & np.isfinite(expert_ffn) & (experts > 0) & (top_k > 0)
    guess = estimated_moe_shape(params, active, shape.layers, shape.width, shape.matrices, cfg)
    experts = np.where(known, experts, guess.experts)
    top_k = np.where(known, top_k, guess.top_k)
    expert_ffn = np.where(known, expert_ffn, guess.expert_ffn)
    moe_layers = np.where(known, np.maximum(shape.layers - dense_layers, 0.0), guess.moe_layers)
    expert_params = shape.matrices * shape.width * expert_ffn * moe_layers   # one expert across the MoE layers
    routed_active = np.where(moe, top_k * expert_params, 0.0)
    routed_total = np.where(moe, np.minimum(experts * expert_params, 0.98 * params), 0.0)
    dense_active = np.maximum(active - routed_active, 0.02 * active)
    return MoeParameters(moe=moe, experts=experts, top_k=top_k, expert_ffn=expert_ffn, moe_layers=moe_layers,
                         routed_active=routed_active, routed_total=routed_total, dense_active=dense_active,
                         dense_total=np.maximum(params - routed_total, dense_active),
                         shape_estimated=moe & ~known)


def grouped_gemm_size(tokens_per_micro_step: np.ndarray, lay: ParallelLayout, ep: np.ndarray,
                      m: MoeParameters) -> np.ndarray:
    """Tokens per expert per micro-step x expert FFN columns per GPU (inf for a dense model): the tokens entering
    the MoE on a GPU (sequence-split over cp, and over tp unless the experts are tensor-parallel too) x top_k routed
    copies, over the experts this GPU holds. Fine-grained experts on few tokens run small, slow GEMMs."""
    tokens_in = tokens_per_micro_step / lay.cp * np.minimum(lay.etp / lay.tp, 1.0)
    tokens_per_expert = tokens_in * m.top_k * ep / np.maximum(m.experts, 1.0)
    values: np.ndarray = np.where(m.moe, tokens_per_expert * m.expert_ffn / lay.etp, np.inf)
    return values


def tensor_parallel_seconds(shape: Shape, m: MoeParameters, lay: ParallelLayout, net: Machine,
                            network: np.ndarray) -> np.ndarray:
    """s per token: 4 all-reduces of d_model x 2 bytes per layer per token, ring 2(t-1)/t, x t GPUs per token;
    plus expert tensor parallelism: the routed copies all-gathered before the experts and reduce-scattered after
    them, forward and backward, 4 x top_k x d_model x 2 bytes x (etp-1) per MoE layer per token."""
    tp_bytes = (16.0 * shape.layers * shape.width * (lay.tp - 1.0)
                + np.where(m.moe, 8.0 * m.top_k * shape.width * m.moe_layers * (lay.etp - 1.0), 0.0))
    return collective_seconds(tp_bytes, np.maximum(lay.tp, lay.etp), np.ones_like(lay.tp), net.domain,
                              net.scale_up, network)


def data_parallel_seconds(dense_weights: np.ndarray, expert_weights: np.ndarray, gpus: np.ndarray,
                          lay: ParallelLayout, ep: np.ndarray, bytes_per_param: np.ndarray, net: Machine,
                          network: np.ndarray) -> np.ndarray:
    """s per optimizer step: weights per GPU x `bytes_per_param` moved per step, ring (n-1)/n; dense weights over
    all GPUs / (tp pp), routed experts over all GPUs / (ep etp pp). Megatron's rank order (tensor, context, data,
    pipeline) places data-parallel peers tp x cp GPUs apart, expert data-parallel peers ep x etp apart; an FSDP
    group named as spanning nodes (MaxText's `FSDP 8 (DCN)`) holds one GPU per node, peers gpus / n apart."""
    # the replicas of a spanning FSDP group inside a node add an all-reduce of 1/n of the weights: left out
    across = lay.fsdp & (lay.fsdp_across > 1)
    weight_dp = np.where(across, lay.fsdp_across, np.maximum(gpus / (lay.tp * lay.pp), 1.0))
    dense_stride = np.where(across, gpus / np.maximum(lay.fsdp_across, 1.0), lay.tp * lay.cp)
    expert_mp = np.minimum(ep * lay.etp * lay.pp, gpus)
    expert_dp = np.maximum(gpus / expert_mp, 1.0)
    dense_bytes = dense_weights / (lay.tp * lay.pp) * bytes_per_param * (weight_dp - 1.0) / weight_dp
    expert_bytes = expert_weights / expert_mp * bytes_per_param * (expert_dp - 1.0) / expert_dp
    values: np.ndarray = (
        collective_seconds(dense_bytes, weight_dp, dense_stride, net.domain, net.scale_up, network)
        + collective_seconds(expert_bytes, expert_dp, ep * lay.etp, net.domain, net.scale_up, network))
    return values


def all_to_alls_per_moe_layer(full_recompute: np.ndarray) -> np.ndarray:
    """All-to-alls per MoE layer per micro-step: dispatch + combine, forward + backward, + the forward again under
    full recomputation (the calls `a2a_call_us` prices, the passes the dispatched bytes make)."""
    values: np.ndarray = 4.0 + 2.0 * full_recompute
    return values


def all_to_all_seconds_per_token(shape: Shape, m: MoeParameters, lay: ParallelLayout, ep: np.ndarray,
                                 full_recompute: np.ndarray, net: Machine, cfg: StructuredConfig) -> np.ndarray:
    """s per token: MoE dispatch + combine, forward + backward (+ forward again under full recomputation), top_k x
    d_model x `a2a_bytes_per_element` per MoE layer, x (ep-1)/ep, over the scale-up link for the EP peers inside the
    domain and the network for the rest."""
    a2a_bytes = (all_to_alls_per_moe_layer(full_recompute) * m.top_k * shape.width * cfg.a2a_bytes_per_element
                 * m.moe_layers * (ep - 1.0) / np.maximum(ep, 1.0))
    values: np.ndarray = np.where(m.moe & (ep > 1), all_to_all_seconds(
        a2a_bytes, ep, lay.etp, net.domain, net.scale_up * cfg.a2a_scale_up_efficiency,
        net.scale_out * cfg.a2a_scale_out_efficiency), 0.0)
    return values


def all_to_all_calls_per_token(m: MoeParameters, lay: ParallelLayout, ep: np.ndarray, full_recompute: np.ndarray,
                               micro_tokens: np.ndarray) -> np.ndarray:
    """All-to-all calls per token on one GPU: all_to_alls_per_moe_layer per MoE layer per micro-step, whose
    micro_batch x seq tokens the tp x cp GPUs of a model replica share (0 without expert parallelism)."""
    values: np.ndarray = np.where(m.moe & (ep > 1), all_to_alls_per_moe_layer(full_recompute) * m.moe_layers
                                  * lay.tp * lay.cp / micro_tokens, 0.0)
    return values


def step_batching(frame: pd.DataFrame, seq: np.ndarray, lay: ParallelLayout, cfg: StructuredConfig
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sequences per micro-batch, tokens per optimizer step over all GPUs, micro-steps per optimizer step on a GPU,
    pipeline bubble as a share of compute), the configured defaults where the row says nothing."""
    micro = _num(frame, "micro_batch")
    micro = np.where(np.isfinite(micro), micro, np.maximum(1.0, np.round(cfg.default_micro_batch_tokens / seq)))
    micro = micro.clip(min=1.0)
    batch_tokens = _num(frame, "global_batch_tokens")
    batch_tokens = np.where(np.isfinite(batch_tokens), batch_tokens,
                            np.maximum(cfg.default_global_batch_tokens, lay.dp * micro * seq))
    # micro-steps per optimizer step on a GPU (pipeline schedules: at least as many as stages)
    microbatches = np.maximum(np.where(np.isfinite(lay.grad_accum), lay.grad_accum,
                                       batch_tokens / (lay.dp * micro * seq)), 1.0)
    bubble = np.where(lay.pp > 1, (lay.pp - 1.0) / (lay.vp * np.maximum(microbatches, lay.pp)), 0.0)
    return micro, batch_tokens, microbatches, bubble


def output_head_layers(frame: pd.DataFrame, shape: Shape, passes: np.ndarray, matmul_flops: np.ndarray,
                       attention_flops: np.ndarray, cfg: StructuredConfig) -> np.ndarray:
    """The output head's FLOPs per token, 2 x vocab x d_model per pass (at most half the matmul FLOPs), in layers'
    worth of the rest; vocab: the row's model's, else `estimate_vocab`."""
    vocab = _given(_num(frame, "vocab"), cfg.estimate_vocab)
    head = np.minimum(2.0 * vocab * shape.width * passes, 0.5 * matmul_flops)
    values: np.ndarray = head / ((matmul_flops + attention_flops - head) / shape.layers)
    return values


def pipeline_stage_imbalance(layers: np.ndarray, pp: np.ndarray, head_layers: np.ndarray) -> np.ndarray:
    """The slowest pipeline rank's work over the mean rank's. Frameworks split the layers with the embedding and
    the output head + loss counted as one layer slot each (Megatron's account-for-embedding/loss-in-pipeline-split,
    torchtitan's default stage weights): a rank holds (layers + 2) / pp slots, the last one the head in place of a
    layer. The head costs `head_layers` layers (2 vocab d_model FLOPs per pass): with a large vocabulary and few
    layers per rank (deep pipelines) the last rank sets the pace."""
    slots = (layers + 2.0) / pp
    slowest = np.maximum(slots, slots - 1.0 + head_layers)
    values: np.ndarray = np.where(pp > 1, np.maximum(slowest / ((layers + head_layers) / pp), 1.0), 1.0)
    return values


def expert_load_imbalance(micro_tokens: np.ndarray, lay: ParallelLayout, ep: np.ndarray, m: MoeParameters
                          ) -> tuple[np.ndarray, np.ndarray]:
    """(sqrt(2 ln ep / local experts), 1 / sqrt(routed tokens per expert per micro-step)): the two factors of the
    routed experts' load imbalance, 0 for dense rows and (the first) without expert parallelism. An EP rank holds
    experts / ep experts; the step waits for the most loaded of ep ranks, about 1 + sqrt(2 ln ep) x its load's CV
    above the mean (Gaussian maximum), the rank's CV = expert CV / sqrt(local)."""
    local = np.maximum(m.experts / np.maximum(ep, 1.0), 1.0)
    imbalance = np.where(m.moe & (ep > 1), np.sqrt(2.0 * np.log(np.maximum(ep, 1.0)) / local), 0.0)
    tokens_in = micro_tokens / lay.cp * np.minimum(lay.etp / lay.tp, 1.0)
    per_expert = np.maximum(tokens_in * m.top_k * ep / np.maximum(m.experts, 1.0), 1.0)
    sampling_cv = np.where(m.moe, 1.0 / np.sqrt(per_expert), 0.0)
    return imbalance, sampling_cv


def compute_terms(frame: pd.DataFrame, cfg: StructuredConfig) -> Terms:
    """Every parameter-free part of the step-time sum, per row."""
    gpus = np.nan_to_num(_num(frame, "num_gpus"), nan=1.0).clip(min=1.0)
    params = _num(frame, "params_b") * 1e9
    active = _num(frame, "active_params_b") * 1e9
    active = np.where(np.isfinite(active), active, params)
    seq = _num(frame, "seq_len")
    shape = model_shape(frame, active, cfg)
    low = np.array([p in LOW_PRECISION for p in _text(frame, "precision")])
    workload = _text(frame, "workload")
    lora = np.array([w in ("lora", "qlora") for w in workload])
    qlora = np.array([w == "qlora" for w in workload])
    checkpointing = _text(frame, "activation_checkpointing")
    peaks = matmul_peaks(frame, low, cfg)
    bandwidth = _num(frame, "mem_bandwidth_tbps") * 1e12
    memory = _num(frame, "gpu_memory_gb") * 1e9
    net = machine(frame, cfg)
    lay = parallel_layout(frame, gpus)
    m = moe_parameters(frame, params, active, shape, cfg)
    ep = expert_parallel_size(lay.ep, lay.tp * lay.pp * lay.cp, gpus, m.moe & lay.fsdp & ~lay.ep_named, m.experts,
                              net.domain)

    micro, batch_tokens, microbatches, bubble = step_batching(frame, seq, lay, cfg)
    tokens_per_gpu_step = batch_tokens / gpus
    full = np.array([c == "full" for c in checkpointing])
    any_recompute = np.array([c in ("full", "selective") for c in checkpointing])
    passes = np.where(lora, 2.0, 3.0) + full            # forward 1 + backward 2 (LoRA: 1), + recompute

    # a run that names no layout and cannot hold unsharded weights + optimizer state is priced as FSDP; LoRA/QLoRA
    # hold a frozen base (no gradient, no optimizer state) plus the adapters' optimizer state
    bytes_per_param = np.where(qlora, cfg.qlora_base_bytes_per_param,
                               np.where(lora, cfg.lora_base_bytes_per_param, 0.0)
                               ) + cfg.optimizer_bytes_per_param * np.where(lora, cfg.lora_trainable_fraction, 1.0)
    unsharded = bytes_per_param * params / lay.model_parallel
    fsdp = lay.fsdp | (~lay.given & np.isfinite(memory) & (unsharded > cfg.fsdp_memory_fraction * memory))
    # optimizer: state of the parameters this GPU holds (sharded by FSDP/ZeRO across data parallel too)
    expert_mp = np.minimum(ep * lay.etp * lay.pp, gpus)
    expert_dp = np.maximum(gpus / expert_mp, 1.0)
    held = (m.dense_total / lay.model_parallel / np.where(fsdp, lay.dp, 1.0)
            + m.routed_total / expert_mp / np.where(fsdp, expert_dp, 1.0))
    # LoRA / QLoRA: the base is frozen: the optimizer and the gradient all-reduce touch only the adapters
    trainable = np.where(lora, cfg.lora_trainable_fraction, 1.0)
    optimizer_s = cfg.optimizer_bytes_per_param * held * trainable / bandwidth / tokens_per_gpu_step

    network = net.scale_out * cfg.scale_out_efficiency
    # data parallel, per step: the trainable weights' gradients reduced (reduce-scatter, or the reduce half of an
    # all-reduce) at grad_reduce_bytes_per_param and the weights gathered back at gather_bytes_per_param; FSDP, per
    # micro-step: gather forward, gather backward, reduce-scatter; a frozen base only its two gathers
    gather, reduce = cfg.gather_bytes_per_param, cfg.grad_reduce_bytes_per_param
    moved = np.where(fsdp, np.where(lora, 2.0 * gather, 2.0 * gather + reduce) * microbatches, gather + reduce)
    synced = np.where(fsdp, 1.0, trainable)
    dp_s = data_parallel_seconds(m.dense_total * synced, m.routed_total * synced, gpus, lay, ep, moved, net,
                                 network) / tokens_per_gpu_step
    # QLoRA: every weight pass (forward, activation-gradient backward, + a recomputed forward) dequantises the
    # 4-bit weights this GPU holds, once per micro-step of micro_batch x seq tokens
    dequant_s = np.where(qlora, cfg.qlora_dequant_bytes_per_param * held * (2.0 + full) / bandwidth / (micro * seq),
                         0.0)

    imbalance, sampling_cv = expert_load_imbalance(micro * seq, lay, ep, m)
    linear_flops, expert_flops = 2.0 * m.dense_active * passes, 2.0 * m.routed_active * passes
    attention_flops = 2.0 * seq * shape.attention_width * shape.attention_layers * (3.0 + any_recompute)
    families = dict(cfg.frameworks)
    return Terms(linear_flops=linear_flops, expert_flops=expert_flops,
                 expert_gemm_size=grouped_gemm_size(micro * seq, lay, ep, m),
                 imbalance_units=imbalance, sampling_cv=sampling_cv,
                 attention_flops=attention_flops,
                 linear_peak=peaks.linear_peak, lowp_share=peaks.lowp_share, peak_16bit=peaks.peak_16bit,
                 power_ratio=peaks.power_ratio, bandwidth=bandwidth, layer_width=shape.layers * shape.width,
                 routed_width=np.where(m.moe, m.top_k * shape.width * m.moe_layers, 0.0),
                 low_precision=low, moe=m.moe, bubble=bubble,
                 stage_imbalance=pipeline_stage_imbalance(shape.layers, lay.pp, output_head_layers(
                     frame, shape, passes, linear_flops + expert_flops, attention_flops, cfg)),
                 optimizer_s=optimizer_s, dequant_s=dequant_s,
                 # fixed per-layer cost of a micro-step (launches, syncs): tp x cp GPUs share micro_batch x seq tokens
                 overhead_units=shape.layers * lay.tp * lay.cp / (micro * seq),
                 a2a_call_units=all_to_all_calls_per_token(m, lay, ep, full, micro * seq),
                 tp_s=tensor_parallel_seconds(shape, m, lay, net, network), dp_s=dp_s,
                 a2a_s=all_to_all_seconds_per_token(shape, m, lay, ep, full, net, cfg),
                 framework=np.array([framework_family(t, families) for t in _text(frame, "framework")], dtype=object),
                 shape_estimated=shape.estimated, moe_shape_estimated=m.shape_estimated)


def exposed(comm: np.ndarray, overlap: float, compute: np.ndarray) -> np.ndarray:
    """Communication left on the critical path: the share `overlap` can hide, but never more than the compute
    it hides behind ((1 - o) t + max(0, o t - compute), the max smoothed over 1% of compute for the fit)."""
    excess = overlap * comm - compute
    soft = 0.01 * compute
    return np.where(comm > 0, (1.0 - overlap) * comm + 0.5 * (excess + np.sqrt(excess**2 + soft**2)), 0.0)


def step_time_parts(terms: Terms, p: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Seconds per token per GPU, by part (before the framework factor)."""
    # fp8/fp4 recipes: their share of the linear FLOPs at the low-precision ceiling, the rest at 16 bit
    # the matmul engines' sustained clock under the board's power limit (1 at or above the MAMF part's power)
    clock = terms.power_ratio ** p["power_clock_exponent"]
    high_eff = p["matmul_efficiency"] * clock

    def seconds_per_flop(lowp_ratio: float) -> np.ndarray:
        low_eff = p["matmul_efficiency"] * lowp_ratio * clock
        values: np.ndarray = np.where(
            terms.low_precision,
            terms.lowp_share / (terms.linear_peak * low_eff) + (1.0 - terms.lowp_share) / (terms.peak_16bit * high_eff),
            1.0 / (terms.linear_peak * high_eff))
        return values

    finite = np.isfinite(terms.expert_gemm_size)
    size = np.where(finite, terms.expert_gemm_size, 1.0)
    grouped = np.where(finite, size / (size + p["grouped_gemm_half_size"]), 1.0)
    linear = terms.linear_flops * seconds_per_flop(p["lowp_matmul_ratio"])
    # routed experts in an fp8/fp4 recipe: grouped GEMMs on per-expert quantised copies gain less than dense layers
    slowest = 1.0 + terms.imbalance_units * np.sqrt(p["expert_load_cv"] ** 2 + terms.sampling_cv ** 2)
    experts = terms.expert_flops * seconds_per_flop(p["lowp_expert_ratio"]) / grouped * slowest
    attention = terms.attention_flops / (terms.peak_16bit * p["attention_efficiency"] * clock)
    bytes_per_token = terms.layer_width * (p["activation_bytes"] + np.where(terms.low_precision,
                                                                             p["quantisation_bytes"], 0.0))
    memory = bytes_per_token / terms.bandwidth
    moe_memory = terms.routed_width * p["moe_permute_bytes"] / terms.bandwidth
    bubble = (1.0 + terms.bubble) * terms.stage_imbalance
    compute = (linear + experts + attention) * bubble + memory + moe_memory
    return {
        "linear": linear * bubble,
        "experts": experts * bubble,
        "attention": attention * bubble,
        "memory": memory,
        "moe_memory": moe_memory,
        "layer_overhead": terms.overhead_units * p["layer_overhead_us"] * 1e-6,
        "optimizer": terms.optimizer_s,
        "qlora_dequant": terms.dequant_s,
        "tensor_parallel": exposed(terms.tp_s, p["tp_overlap"], compute),
        "data_parallel": exposed(terms.dp_s, p["dp_overlap"], compute),
        # alpha-beta: each call's fixed cost plus its bytes over the links, hidden as far as a2a_overlap hides
        "all_to_all": exposed(terms.a2a_s + terms.a2a_call_units * p["a2a_call_us"] * 1e-6, p["a2a_overlap"],
                              compute),
    }


class StructuredStepTime(RegressorMixin, BaseEstimator):
    """Physics-first step-time model as a scikit-learn regressor on feature rows -> log MFU (the
    pipeline's target space: log(tokens/s/GPU) - log(physics bound))."""

    def __init__(self, config: Mapping[str, Any] | None = None, fit_framework: bool = True) -> None:
        self.config = config
        self.fit_framework = fit_framework

    def _cfg(self) -> StructuredConfig:
        return StructuredConfig.from_config(self.config or {})

    @staticmethod
    def _framework_index(terms: Terms, frameworks: list[str]) -> np.ndarray:
        """Per row: 1 + the position of its framework family in `frameworks`, 0 for one not in it (pooled)."""
        return np.array([frameworks.index(f) + 1 if f in frameworks else 0 for f in terms.framework], dtype=int)

    def _log_time(self, terms: Terms, theta: np.ndarray, frameworks: list[str], pooled: float = 0.0,
                  index: np.ndarray | None = None) -> np.ndarray:
        p = _parameter_values(theta)
        total = sum(step_time_parts(terms, p).values())
        index = self._framework_index(terms, frameworks) if index is None else index
        log_factor = np.concatenate([[pooled], theta[len(PARAMETERS):len(PARAMETERS) + len(frameworks)]])[index]
        values: np.ndarray = np.log(total) + log_factor
        return values

    def fit(self, X: pd.DataFrame, y: np.ndarray) -> StructuredStepTime:
        cfg = self._cfg()
        unset = sorted(k for k in FIT_ONLY if math.isnan(getattr(cfg, k)))
        if unset:
            raise KeyError(f"config/models.toml [structured] lacks {', '.join(unset)}")
        terms = compute_terms(X, cfg)
        bound = _num(X, PHYSICS_BOUND)
        log_time_measured = -(np.asarray(y, dtype="float64") + np.log(bound))   # y = log MFU
        ok = np.isfinite(log_time_measured) & np.isfinite(terms.linear_flops) & np.isfinite(terms.bandwidth)
        seen = sorted({str(f) for f in terms.framework[ok]}) if self.fit_framework else []
        frameworks = [f for f in seen if f not in ("unknown", "other")]
        init = np.array([_to_theta(k, v[0]) for k, v in PARAMETERS.items()] + [0.0] * len(frameworks))
        cap = math.log(cfg.max_framework_factor)
        lower = np.array([_to_theta(k, v[1]) for k, v in PARAMETERS.items()] + [-cap] * len(frameworks))
        upper = np.array([_to_theta(k, v[2]) for k, v in PARAMETERS.items()] + [cap] * len(frameworks))
        sub = _subset(terms, ok)
        names = list(PARAMETERS)
        # a parameter no training row depends on stays at its initial value (a free direction of the fit would
        # otherwise wander, e.g. fp8 quantisation bytes fitted on 16-bit runs only)
        for name in unidentified(sub):
            i = names.index(name)
            lower[i], upper[i] = init[i] - 1e-9, init[i] + 1e-9
        # ridge priors: (position in theta, prior in theta's space, sqrt weight); ratios and sizes in log space
        priors = [(names.index(name), _prior_space(name, getattr(cfg, value)), math.sqrt(getattr(cfg, weight)))
                  for name, (value, weight) in PRIORS.items()]

        index = self._framework_index(sub, frameworks)
        ridge = framework_ridge_weights(index, np.asarray(model_keys(X), dtype=object)[ok], len(frameworks),
                                        cfg.framework_ridge)

        def residuals(theta: np.ndarray) -> np.ndarray:
            r = self._log_time(sub, theta, frameworks, index=index) - log_time_measured[ok]
            # each framework factor is shrunk towards 1 (ridge on its log, by the models it ran)
            return np.concatenate([r, ridge * theta[len(PARAMETERS):],
                                   [w * (_prior_space(names[i], _from_theta(names[i], theta[i])) - prior)
                                    for i, prior, w in priors]])

        result = least_squares(residuals, init, bounds=(lower, upper), loss="soft_l1", f_scale=0.1,
                               x_scale="jac", max_nfev=2000)
        self.parameters_ = _parameter_values(result.x)
        self.framework_factors_ = {f: float(math.exp(v)) for f, v in
                                   zip(frameworks, result.x[len(PARAMETERS):], strict=True)}
        self.theta_ = result.x
        self.frameworks_ = frameworks
        # a framework the data does not have gets the pooled factor: the training rows' mean log factor
        fitted_log = self._log_time(sub, result.x, frameworks) - self._log_time(sub, result.x, [], 0.0)
        self.pooled_log_factor_ = float(np.mean(fitted_log)) if len(fitted_log) else 0.0
        self.seen_frameworks_ = tuple(sorted({str(f) for f in terms.framework[ok]}))
        return self

    def _fitted_parameters(self) -> dict[str, float]:
        """The learned values by name; a version fitted before a parameter existed gets what it computed without it
        (routed experts at the linear layers' low-precision ratio, no load imbalance, no cost per all-to-all call)."""
        return {"lowp_expert_ratio": self.parameters_["lowp_matmul_ratio"], "expert_load_cv": 0.0, "a2a_call_us": 0.0,
                **self.parameters_}

    def predict_log_tokens_per_sec(self, X: pd.DataFrame) -> np.ndarray:
        terms = compute_terms(X, self._cfg())
        total = sum(step_time_parts(terms, self._fitted_parameters()).values())
        log_factor = np.array([math.log(self.framework_factors_[str(f)]) if str(f) in self.framework_factors_
                               else self.pooled_log_factor_ for f in terms.framework])
        values: np.ndarray = -(np.log(total) + log_factor)
        return values

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        values: np.ndarray = self.predict_log_tokens_per_sec(X) - np.log(_num(X, PHYSICS_BOUND))
        return values

    def breakdown(self, X: pd.DataFrame) -> pd.DataFrame:
        """Seconds per token per GPU by part, the framework factor and the predicted tokens/s per GPU."""
        terms = compute_terms(X, self._cfg())
        parts = step_time_parts(terms, self._fitted_parameters())
        pooled = math.exp(self.pooled_log_factor_)
        factor = np.array([self.framework_factors_.get(str(f), pooled) for f in terms.framework])
        out = pd.DataFrame({f"{k}_s_per_token": v for k, v in parts.items()}, index=X.index)
        out["framework_family"] = terms.framework
        out["framework_factor"] = factor
        out["predicted_tokens_per_sec_per_gpu"] = 1.0 / (sum(parts.values()) * factor)
        return out

    def learned(self) -> dict[str, tuple[float, str]]:
        """Learned parameter -> (value, unit), framework factors included."""
        fitted = self._fitted_parameters()
        out = {name: (fitted[name], PARAMETERS[name][3]) for name in PARAMETERS}
        for fw, factor in self.framework_factors_.items():
            out[f"framework_factor[{fw}]"] = (factor, "step-time multiplier")
        out["framework_factor[pooled]"] = (math.exp(self.pooled_log_factor_),
                                           "step-time multiplier of a framework not in the training data")
        return out


def framework_ridge_weights(index: np.ndarray, models: np.ndarray, frameworks: int, ridge: float) -> np.ndarray:
    """Per framework (index 1..frameworks of the rows), the square root of its ridge weight on the log factor:
    `ridge` x its runs / the distinct models among them. A framework's factor is then shrunk by how many models
    it ran, not by how many runs: runs of one model share its shape, kernels and tuning, and eight runs of one
    model (a blog's A/B configurations) would otherwise set the factor every other model of the framework is
    predicted with (the MaxText DeepSeek-V3 runs on MI355X set the `jax` factor of the dense MaxText runs on H100,
    predicted at 0.65-0.90x held out by source)."""
    weights = np.ones(frameworks)
    for j in range(frameworks):
        inside = index == j + 1
        weights[j] = inside.sum() / max(len(set(models[inside])), 1)
    values: np.ndarray = np.sqrt(ridge * weights)
    return values


def unidentified(terms: Terms) -> list[str]:
    """Learned parameters that no row of `terms` depends on."""
    out = []
    if not terms.low_precision.any():
        out.append("quantisation_bytes")
    if not (terms.power_ratio < 1.0).any():
        out.append("power_clock_exponent")
    if not terms.moe.any():
        out += ["grouped_gemm_half_size", "moe_permute_bytes"]
    if not (terms.imbalance_units > 0).any():
        out.append("expert_load_cv")
    if not (terms.moe & terms.low_precision).any():
        out.append("lowp_expert_ratio")
    if not (terms.a2a_s > 0).any():
        out += ["a2a_overlap", "a2a_call_us"]
    if not (terms.tp_s > 0).any():
        out.append("tp_overlap")
    if not (terms.dp_s > 0).any():
        out.append("dp_overlap")
    return out


# learned parameters fitted as log10 of their value (they span orders of magnitude)
LOG_FITTED = ("grouped_gemm_half_size",)


def _to_theta(name: str, value: float) -> float:
    return math.log10(value) if name in LOG_FITTED else value


def _from_theta(name: str, value: float) -> float:
    return 10.0 ** value if name in LOG_FITTED else value


def _prior_space(name: str, value: float) -> float:
    """Where a prior penalises: log of ratios and sizes, the value itself for overlaps (which may be 0)."""
    return float(value) if name.endswith("overlap") else math.log(value)


def _parameter_values(theta: np.ndarray) -> dict[str, float]:
    return {name: float(_from_theta(name, v)) for name, v in zip(PARAMETERS, theta[:len(PARAMETERS)], strict=True)}


def _subset(terms: Terms, mask: np.ndarray) -> Terms:
    return Terms(**{name: getattr(terms, name)[mask] for name in Terms.__dataclass_fields__})
