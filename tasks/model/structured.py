"""The structured (physics-first) throughput model: a training step's time per token as a sum of parts
computed from first principles, with a few named, bounded efficiencies learned from telemetry.

Time per token on one GPU (s per token of that GPU's share; tokens/s/GPU = 1 / time):

    t = k_fw x [ (t_linear + t_attention) x (1 + pipeline bubble) + t_memory + t_overhead + t_optimizer
                 + t_tp x (1 - tp_overlap) + t_dp x (1 - dp_overlap) + t_all_to_all x (1 - dp_overlap) ]

- t_linear: the linear layers' FLOPs, 2 x active params x passes (forward 1 + backward 2; LoRA/QLoRA
  backward 1, the frozen weights get no gradient; +1 forward when every layer is recomputed), at the
  peak of the precision the recipe runs them in: fp8/fp4 recipes run the linear layers at the fp8/fp4
  peak x `lowp_matmul_efficiency`, 16-bit runs at the 16-bit peak x `matmul_efficiency`; MoE runs' linear
  FLOPs are divided by `moe_efficiency` (grouped GEMMs, routing, load imbalance).
- t_attention: causal attention's QK^T and AV, 2 x seq x d_model x n_layers FLOPs per token forward
  (half of the 4 x seq x d_model x n_layers of a full square), x3 for forward + backward, +1 forward
  with any recomputation, always at the 16-bit peak x `attention_efficiency` (no recipe runs attention
  in fp8 here).
- t_memory: elementwise / norm / activation traffic, `activation_bytes` bytes per layer per d_model per
  token (plus `quantisation_bytes` more for fp8/fp4 recipes: the casts and scales of every linear
  input), against the GPU's memory bandwidth.
- t_overhead: `layer_overhead_us` per layer per micro-step (kernel launches, synchronisation), which does
  not shrink on faster GPUs, spread over the micro-batch's tokens (x tp x cp GPUs sharing them).
- t_optimizer: the optimizer's read-modify-write of its state and the weights, `optimizer_bytes_per_param`
  (config) x parameters held per GPU, once per step, spread over the GPU's tokens per step.
- t_tp: tensor-parallel all-reduces (4 per layer per token, forward + backward) against NVLink.
- t_dp: data-parallel / FSDP gradient and weight traffic per step (parameters per model-parallel rank x
  2 bytes x 2 (all-reduce) or 3 (FSDP: gather forward, gather backward, reduce-scatter)) against NVLink
  inside a node (or an NVL72 domain) and the network per GPU beyond it, spread over tokens per step.
- t_all_to_all: MoE token dispatch + combine (forward + backward, top-k copies of d_model x 2 bytes per
  MoE layer) across the expert-parallel group.
- pipeline bubble: (pp - 1) / (virtual stages x micro-batches) (Narayanan et al. 2021).
- k_fw: a per-framework factor, ridge-shrunk towards 1; a framework the training data does not have gets
  the pooled value 1.

Fitted with scipy.optimize.least_squares on log(predicted time) - log(measured time) (robust soft-L1
loss), every efficiency bounded. The model shape comes from the row (n_layers, d_model, or
data/reference/model_shapes.csv by model_name) or, unknown, from the parameter count: N = 12 L d^2 with
d = `shape_aspect_ratio` x L (7B: L 33, d 4,200; Llama-2-7B is 32 x 4096).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares
from sklearn.base import BaseEstimator, RegressorMixin

from tasks.model.design import PHYSICS_BOUND

# Feature-row columns the structured model reads (besides the physics bound, to return log MFU).
STRUCTURED_NUMERIC = (
    "num_gpus", "params_b", "active_params_b", "seq_len", "micro_batch", "global_batch_tokens",
    "peak_tflops", "peak_16bit_tflops", "mem_bandwidth_tbps", "intra_node_bw_gbps_unidir", "n_layers", "d_model",
    "matmul_ceiling_16bit", "matmul_ceiling_lowp",
)
STRUCTURED_CATEGORICAL = ("precision", "precision_recipe", "workload", "activation_checkpointing", "framework",
                          "parallelism", "gpu")

LOW_PRECISION = ("fp8", "fp4")

# name -> (initial value, lower bound, upper bound, unit) of the learned parameters
PARAMETERS: dict[str, tuple[float, float, float, str]] = {
    "matmul_efficiency": (0.6, 0.2, 1.0, "fraction of the 16-bit matmul ceiling (MAMF) reached by linear layers"),
    "lowp_matmul_ratio": (0.85, 0.3, 1.0, "fp8/fp4 linear-layer efficiency relative to the 16-bit one"),
    # causal FLOPs counted as half a square (what FlashAttention computes); learned, not assumed
    "attention_efficiency": (0.4, 0.2, 1.0, "fraction of the 16-bit matmul ceiling (MAMF) reached by attention"),
    "activation_bytes": (40.0, 0.0, 400.0, "bytes per layer per d_model per token (elementwise/norm traffic)"),
    "quantisation_bytes": (20.0, 0.0, 400.0, "extra bytes per layer per d_model per token in fp8/fp4 recipes"),
    "moe_efficiency": (0.7, 0.2, 1.0, "MoE linear-layer throughput relative to dense"),
    "layer_overhead_us": (20.0, 0.0, 100.0, "microseconds per layer per micro-batch (launches, syncs)"),
    "tp_overlap": (0.5, 0.0, 1.0, "share of tensor-parallel communication hidden behind compute"),
    "dp_overlap": (0.8, 0.0, 1.0, "share of data-parallel / all-to-all communication hidden behind compute"),
}


def _first_int(pattern: str, text: str) -> int | None:
    match = re.search(pattern, text, flags=re.IGNORECASE)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Layout:
    """Parallel sizes a `parallelism` text gives (1 where it says nothing)."""

    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    vp: int = 1
    grad_accum: int | None = None
    fsdp: bool = False


@lru_cache(maxsize=4096)
def parse_parallelism(text: str | None) -> Layout:
    """'TP=4, PP=8, VP=12, GA=16', 'TP 4 PP 8 CP 2 EP 8', 'FSDP 32, TP 8', 'FSDP FULL_SHARD; grad_accum 2',
    'TP 1; ZeRO-1 shard group 8; micro_num 4' -> sizes. Unreadable parts count as 1 (no model parallelism)."""
    if not isinstance(text, str) or not text.strip():
        return Layout()
    t = text.replace("AsyncTP", "TP")

    def size(name: str) -> int:
        value = _first_int(rf"(?<![A-Za-z]){name}\s*[= ]\s*(\d+)", t)
        return max(1, value) if value else 1

    grad_accum = (_first_int(r"(?<![A-Za-z])GA\s*[= ]\s*(\d+)", t) or _first_int(r"grad_accum\s*(\d+)", t)
                  or _first_int(r"micro_num\s*(\d+)", t))
    vp_text = _first_int(r"(?<![A-Za-z])VP\s*[= ]\s*(\d+)", t)
    fsdp = bool(re.search(r"FSDP|FULL_SHARD|ZeRO-3", t, flags=re.IGNORECASE)) and not re.search(
        r"FSDP\s+0\b", t)
    return Layout(tp=size("TP"), pp=size("PP"), cp=size("CP"), ep=size("EP"), vp=max(1, vp_text or 1),
                  grad_accum=grad_accum, fsdp=fsdp)


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


def estimated_shape(active_params_b: float, aspect_ratio: float) -> tuple[float, float]:
    """(n_layers, d_model) of a dense transformer with N = 12 L d^2 and d = aspect_ratio x L."""
    n = active_params_b * 1e9
    layers = (n / (12.0 * aspect_ratio**2)) ** (1.0 / 3.0)
    return layers, aspect_ratio * layers


@dataclass(frozen=True)
class StructuredConfig:
    """Fixed physics constants (config/models.toml [structured]); the efficiencies are learned."""

    optimizer_bytes_per_param: float = 16.0   # Adam: fp32 master weight, m, v read + written, bf16 copy
    inter_node_gbps: float = 50.0             # GB/s per GPU per direction beyond the NVLink domain (400 Gb/s NIC)
    gpus_per_node: int = 8
    nvl_domain_gpus: int = 72                 # GB200/GB300 NVL72: NVLink spans 72 GPUs
    default_global_batch_tokens: float = 4.0e6
    default_micro_batch_tokens: float = 8192.0   # tokens per micro-step when a run gives no micro_batch
    moe_top_k: float = 2.0
    shape_aspect_ratio: float = 128.0
    default_matmul_ceiling: float = 0.78      # measured max achievable matmul / peak of a GPU without a MAMF row
    framework_ridge: float = 4.0              # penalty weight on log framework factors (shrinks towards the pool)
    lowp_ratio_prior: float = 0.9             # prior of lowp_matmul_ratio when no fp8/fp4 run is in the data
    lowp_ratio_weight: float = 1.0            # its penalty weight (data with fp8 runs outweighs it)
    max_framework_factor: float = 2.0
    frameworks: tuple[tuple[str, str], ...] = ()
    low_precision_share: tuple[tuple[str, float], ...] = ()   # recipe -> share of linear FLOPs in fp8/fp4

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> StructuredConfig:
        known = {f for f in cls.__dataclass_fields__ if f not in ("frameworks", "low_precision_share")}
        values = {k: v for k, v in cfg.items() if k in known}
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

    linear_flops: np.ndarray       # FLOPs per token on one GPU's share (linear layers, incl. recompute)
    attention_flops: np.ndarray    # FLOPs per token (causal attention, incl. recompute)
    linear_peak: np.ndarray        # FLOP/s: the achievable matmul peak the linear layers run at
    lowp_share: np.ndarray         # share of the linear FLOPs at that (fp8/fp4) peak; the rest at 16 bit
    peak_16bit: np.ndarray         # FLOP/s: the achievable 16-bit matmul peak (attention)
    bandwidth: np.ndarray          # B/s
    layer_width: np.ndarray        # n_layers x d_model (per token activation scale)
    low_precision: np.ndarray      # bool
    moe: np.ndarray                # bool
    bubble: np.ndarray             # pipeline bubble fraction
    optimizer_s: np.ndarray        # s per token
    tp_s: np.ndarray               # s per token
    dp_s: np.ndarray               # s per token
    a2a_s: np.ndarray              # s per token
    overhead_units: np.ndarray     # layers x tp x cp / tokens per micro-batch (x overhead = s per token)
    framework: np.ndarray          # framework family per row
    shape_estimated: np.ndarray    # bool: shape from the parameter count


def _num(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype="float64")


def _text(frame: pd.DataFrame, name: str) -> list[str | None]:
    if name not in frame.columns:
        return [None] * len(frame)
    return [None if (v is None or (isinstance(v, float) and math.isnan(v))) else str(v) for v in frame[name]]


def compute_terms(frame: pd.DataFrame, cfg: StructuredConfig) -> Terms:
    """Every parameter-free part of the step-time sum, per row."""
    n = len(frame)
    gpus = np.nan_to_num(_num(frame, "num_gpus"), nan=1.0).clip(min=1.0)
    params = _num(frame, "params_b") * 1e9
    active = _num(frame, "active_params_b") * 1e9
    active = np.where(np.isfinite(active), active, params)
    seq = _num(frame, "seq_len")
    layers, width = _num(frame, "n_layers"), _num(frame, "d_model")
    est_layers, est_width = estimated_shape(active / 1e9, cfg.shape_aspect_ratio)
    shape_estimated = ~(np.isfinite(layers) & np.isfinite(width) & (layers > 0) & (width > 0))
    layers = np.where(shape_estimated, est_layers, layers)
    width = np.where(shape_estimated, est_width, width)

    precision = _text(frame, "precision")
    low = np.array([p in LOW_PRECISION for p in precision])
    workload = _text(frame, "workload")
    lora = np.array([w in ("lora", "qlora") for w in workload])
    checkpointing = _text(frame, "activation_checkpointing")

    peak = _num(frame, "peak_tflops") * 1e12
    peak16 = _num(frame, "peak_16bit_tflops") * 1e12
    peak16 = np.where(np.isfinite(peak16), peak16, peak)
    # the measured ceiling of the GPU's matmul engine (MAMF / peak): efficiencies are learned relative to it
    ceiling16 = np.nan_to_num(_num(frame, "matmul_ceiling_16bit"), nan=cfg.default_matmul_ceiling)
    ceiling_low = _num(frame, "matmul_ceiling_lowp")
    ceiling_low = np.where(np.isfinite(ceiling_low), ceiling_low, ceiling16)
    linear_peak = np.where(low, peak * ceiling_low, peak16 * ceiling16)
    shares = dict(cfg.low_precision_share)
    lowp_share = np.array([shares.get(r or "", 1.0) for r in _text(frame, "precision_recipe")]) * low
    peak16 = peak16 * ceiling16
    bandwidth = _num(frame, "mem_bandwidth_tbps") * 1e12
    nvlink = np.nan_to_num(_num(frame, "intra_node_bw_gbps_unidir"), nan=cfg.inter_node_gbps) * 1e9

    layouts = [parse_parallelism(t) for t in _text(frame, "parallelism")]
    tp = np.array([lay.tp for lay in layouts], dtype="float64")
    pp = np.array([lay.pp for lay in layouts], dtype="float64")
    cp = np.array([lay.cp for lay in layouts], dtype="float64")
    ep = np.array([lay.ep for lay in layouts], dtype="float64")
    vp = np.array([lay.vp for lay in layouts], dtype="float64")
    fsdp = np.array([lay.fsdp for lay in layouts])
    # a layout asking for more GPUs than the run has (e.g. "PP=41" on 8 GPUs) is not believed: no pipeline
    pp = np.where(tp * pp * cp > gpus, 1.0, pp)
    model_parallel = np.minimum(tp * pp * cp, gpus)
    dp = np.maximum(gpus / model_parallel, 1.0)

    micro = _num(frame, "micro_batch")
    micro = np.where(np.isfinite(micro), micro, np.maximum(1.0, np.round(cfg.default_micro_batch_tokens / seq)))
    micro = micro.clip(min=1.0)
    batch_tokens = _num(frame, "global_batch_tokens")
    batch_tokens = np.where(np.isfinite(batch_tokens), batch_tokens,
                            np.maximum(cfg.default_global_batch_tokens, gpus / model_parallel * micro * seq))
    tokens_per_gpu_step = batch_tokens / gpus
    ga = np.array([lay.grad_accum or np.nan for lay in layouts], dtype="float64")
    # checkpointing not given: none (the runs that do not say mostly recompute selectively at most)
    full = np.array([c == "full" for c in checkpointing])
    any_recompute = np.array([c in ("full", "selective") for c in checkpointing])
    passes = np.where(lora, 2.0, 3.0) + full            # forward 1 + backward 2 (LoRA: 1), + recompute
    linear_flops = 2.0 * active * passes
    attention_flops = 2.0 * seq * width * layers * (3.0 + any_recompute)

    # pipeline schedules split the local batch into at least as many micro-batches as stages
    microbatches = np.maximum(np.where(np.isfinite(ga), ga, batch_tokens / (dp * micro * seq)), pp)
    bubble = np.where(pp > 1, (pp - 1.0) / (vp * microbatches), 0.0)

    # the domain NVLink spans: a node, or the 72-GPU NVL domain of GB200/GB300
    gpu_names = _text(frame, "gpu")
    domain = np.array([cfg.nvl_domain_gpus if (g or "").startswith("GB") else cfg.gpus_per_node for g in gpu_names],
                      dtype="float64")
    inter = cfg.inter_node_gbps * 1e9

    # optimizer: state of the parameters this GPU holds (sharded by FSDP/ZeRO across data parallel too)
    held = params / model_parallel / np.where(fsdp, dp, 1.0)
    optimizer_s = cfg.optimizer_bytes_per_param * held / bandwidth / tokens_per_gpu_step
    # tensor parallel: 4 all-reduces of d_model x 2 bytes per layer per token, ring 2(t-1)/t, x t GPUs per token
    tp_s = np.where(tp > 1, 16.0 * layers * width * (tp - 1.0) / nvlink, 0.0)
    # data parallel: parameters per model-parallel rank x 2 bytes x (2 all-reduce | 3 FSDP), ring (d-1)/d
    dp_bytes = params / model_parallel * 2.0 * np.where(fsdp, 3.0, 2.0) * (dp - 1.0) / dp
    dp_bandwidth = np.where(gpus <= domain, nvlink, inter)
    dp_s = np.where(dp > 1, dp_bytes / dp_bandwidth / tokens_per_gpu_step, 0.0)
    # MoE all-to-all: dispatch + combine, forward + backward, top-k copies of the token's hidden state
    moe = np.isfinite(active) & np.isfinite(params) & (active < params * 0.999)
    a2a_bandwidth = np.where(ep * tp <= domain, nvlink, inter)
    a2a_bytes = 4.0 * cfg.moe_top_k * width * 2.0 * layers * (ep - 1.0) / ep
    a2a_s = np.where(moe & (ep > 1), a2a_bytes / a2a_bandwidth, 0.0)

    # fixed per-layer cost of a micro-step (kernel launches, synchronisation): the group of tp x cp GPUs
    # pushes micro_batch x seq tokens through each layer per micro-step
    overhead_units = layers * tp * cp / (micro * seq)

    families = dict(cfg.frameworks)
    framework = np.array([framework_family(t, families) for t in _text(frame, "framework")], dtype=object)
    del n
    return Terms(linear_flops=linear_flops, attention_flops=attention_flops, linear_peak=linear_peak,
                 lowp_share=lowp_share,
                 peak_16bit=peak16, bandwidth=bandwidth, layer_width=layers * width, low_precision=low, moe=moe,
                 bubble=bubble, optimizer_s=optimizer_s,
                 overhead_units=overhead_units, tp_s=tp_s, dp_s=dp_s, a2a_s=a2a_s, framework=framework,
                 shape_estimated=shape_estimated)


def step_time_parts(terms: Terms, p: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Seconds per token per GPU, by part (before the framework factor)."""
    moe = np.where(terms.moe, p["moe_efficiency"], 1.0)
    # fp8/fp4 recipes: their share of the linear FLOPs at the low-precision ceiling, the rest at 16 bit
    low_eff = p["matmul_efficiency"] * p["lowp_matmul_ratio"] * moe
    high_eff = p["matmul_efficiency"] * moe
    linear = terms.linear_flops * np.where(
        terms.low_precision,
        terms.lowp_share / (terms.linear_peak * low_eff) + (1.0 - terms.lowp_share) / (terms.peak_16bit * high_eff),
        1.0 / (terms.linear_peak * high_eff))
    attention = terms.attention_flops / (terms.peak_16bit * p["attention_efficiency"])
    bytes_per_token = terms.layer_width * (p["activation_bytes"] + np.where(terms.low_precision,
                                                                             p["quantisation_bytes"], 0.0))
    return {
        "linear": linear * (1.0 + terms.bubble),
        "attention": attention * (1.0 + terms.bubble),
        "memory": bytes_per_token / terms.bandwidth,
        "layer_overhead": terms.overhead_units * p["layer_overhead_us"] * 1e-6,
        "optimizer": terms.optimizer_s,
        "tensor_parallel": terms.tp_s * (1.0 - p["tp_overlap"]),
        "data_parallel": terms.dp_s * (1.0 - p["dp_overlap"]),
        "all_to_all": terms.a2a_s * (1.0 - p["dp_overlap"]),
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
        names = list(PARAMETERS)
        p = dict(zip(names, theta[:len(names)], strict=True))
        total = sum(step_time_parts(terms, p).values())
        index = self._framework_index(terms, frameworks) if index is None else index
        log_factor = np.concatenate([[pooled], theta[len(names):len(names) + len(frameworks)]])[index]
        return np.log(total) + log_factor

    def fit(self, X: pd.DataFrame, y: np.ndarray) -> StructuredStepTime:
        cfg = self._cfg()
        terms = compute_terms(X, cfg)
        bound = _num(X, PHYSICS_BOUND)
        log_time_measured = -(np.asarray(y, dtype="float64") + np.log(bound))   # y = log MFU
        ok = np.isfinite(log_time_measured) & np.isfinite(terms.linear_flops) & np.isfinite(terms.bandwidth)
        seen = sorted({str(f) for f in terms.framework[ok]}) if self.fit_framework else []
        frameworks = [f for f in seen if f not in ("unknown", "other")]
        init = np.array([v[0] for v in PARAMETERS.values()] + [0.0] * len(frameworks))
        cap = math.log(cfg.max_framework_factor)
        lower = np.array([v[1] for v in PARAMETERS.values()] + [-cap] * len(frameworks))
        upper = np.array([v[2] for v in PARAMETERS.values()] + [cap] * len(frameworks))
        ridge = math.sqrt(cfg.framework_ridge)
        sub = _subset(terms, ok)
        lowp_index = list(PARAMETERS).index("lowp_matmul_ratio")
        prior = math.log(cfg.lowp_ratio_prior)
        prior_weight = math.sqrt(cfg.lowp_ratio_weight)

        index = self._framework_index(sub, frameworks)

        def residuals(theta: np.ndarray) -> np.ndarray:
            r = self._log_time(sub, theta, frameworks, index=index) - log_time_measured[ok]
            # each framework factor is shrunk towards 1 (ridge on its log)
            return np.concatenate([r, ridge * theta[len(PARAMETERS):],
                                   [prior_weight * (math.log(theta[lowp_index]) - prior)]])

        result = least_squares(residuals, init, bounds=(lower, upper), loss="soft_l1", f_scale=0.1,
                               x_scale="jac", max_nfev=2000)
        self.parameters_ = dict(zip(PARAMETERS, (float(v) for v in result.x[:len(PARAMETERS)]), strict=True))
        self.framework_factors_ = {f: float(math.exp(v)) for f, v in
                                   zip(frameworks, result.x[len(PARAMETERS):], strict=True)}
        self.theta_ = result.x
        self.frameworks_ = frameworks
        # a framework the data does not have gets the pooled factor: the training rows' mean log factor
        fitted_log = self._log_time(sub, result.x, frameworks) - self._log_time(sub, result.x, [], 0.0)
        self.pooled_log_factor_ = float(np.mean(fitted_log)) if len(fitted_log) else 0.0
        self.seen_frameworks_ = tuple(sorted({str(f) for f in terms.framework[ok]}))
        return self

    def predict_log_tokens_per_sec(self, X: pd.DataFrame) -> np.ndarray:
        terms = compute_terms(X, self._cfg())
        return -self._log_time(terms, self.theta_, self.frameworks_, self.pooled_log_factor_)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.predict_log_tokens_per_sec(X) - np.log(_num(X, PHYSICS_BOUND))

    def breakdown(self, X: pd.DataFrame) -> pd.DataFrame:
        """Seconds per token per GPU by part, the framework factor and the predicted tokens/s per GPU."""
        terms = compute_terms(X, self._cfg())
        parts = step_time_parts(terms, self.parameters_)
        pooled = math.exp(self.pooled_log_factor_)
        factor = np.array([self.framework_factors_.get(str(f), pooled) for f in terms.framework])
        out = pd.DataFrame({f"{k}_s_per_token": v for k, v in parts.items()}, index=X.index)
        out["framework_family"] = terms.framework
        out["framework_factor"] = factor
        out["predicted_tokens_per_sec_per_gpu"] = 1.0 / (sum(parts.values()) * factor)
        return out

    def learned(self) -> dict[str, tuple[float, str]]:
        """Learned parameter -> (value, unit), framework factors included."""
        out = {name: (self.parameters_[name], PARAMETERS[name][3]) for name in PARAMETERS}
        for fw, factor in self.framework_factors_.items():
            out[f"framework_factor[{fw}]"] = (factor, "step-time multiplier")
        out["framework_factor[pooled]"] = (math.exp(self.pooled_log_factor_),
                                           "step-time multiplier of a framework not in the training data")
        return out


def _subset(terms: Terms, mask: np.ndarray) -> Terms:
    return Terms(**{name: getattr(terms, name)[mask] for name in Terms.__dataclass_fields__})
