"""config/models.toml: the token-efficiency model's training, as a typed model (the one place its defaults live)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from tasks import config
from tasks.config import Count, Fraction, NonNegative, Positive, Strict


class Target(Strict):
    min_mfu: Annotated[float, Field(gt=0, le=1)] = 0.01
    max_mfu: Annotated[float, Field(gt=0, le=1)] = 1.0


class FeatureColumns(Strict):
    log_numeric: list[str] = []
    numeric: list[str] = []
    categorical: list[str] = []


class Structured(Strict):
    optimizer_bytes_per_param: Positive
    default_scale_up_domain_gpus: Annotated[float, Field(ge=1)]
    default_scale_out_gbps_per_gpu: Positive
    scale_out_efficiency: Annotated[float, Field(gt=0, le=1)]
    a2a_scale_up_efficiency: Annotated[float, Field(gt=0, le=1)]
    a2a_scale_out_efficiency: Annotated[float, Field(gt=0, le=1)]
    a2a_bytes_per_element: Positive
    default_global_batch_tokens: Positive
    default_micro_batch_tokens: Positive
    default_ffn_matrices: Positive
    shape_aspect_ratio: Positive
    estimate_vocab: Positive
    estimate_fine_grained_ratio: Annotated[float, Field(ge=1)]
    estimate_top_k_coarse: Annotated[float, Field(ge=1)]
    estimate_top_k_fine: Annotated[float, Field(ge=1)]
    fsdp_memory_fraction: Annotated[float, Field(gt=0, le=1)]
    default_matmul_ceiling: Annotated[float, Field(gt=0, le=1)]
    framework_ridge: NonNegative
    max_framework_factor: Annotated[float, Field(ge=1)]
    lowp_ratio_prior: Positive
    lowp_ratio_weight: NonNegative
    lowp_expert_ratio_prior: Annotated[float, Field(gt=0, le=1)]
    lowp_expert_ratio_weight: NonNegative
    grouped_gemm_half_size_prior: Positive
    grouped_gemm_prior_weight: NonNegative
    a2a_overlap_prior: Fraction
    a2a_overlap_prior_weight: NonNegative
    moe_permute_bytes_prior: Positive
    moe_permute_prior_weight: NonNegative
    power_clock_exponent_prior: Annotated[float, Field(gt=0, le=1)]
    power_clock_prior_weight: NonNegative
    lora_trainable_fraction: Annotated[float, Field(gt=0, le=1)] = 0.002
    qlora_dequant_bytes_per_param: NonNegative = 4.5
    lora_base_bytes_per_param: Positive = 2.0
    qlora_base_bytes_per_param: Positive = 0.52
    gather_bytes_per_param: Positive = 2.0
    grad_reduce_bytes_per_param: Positive = 4.0
    low_precision_share: dict[str, Fraction] = {}
    frameworks: dict[str, str] = {}


class CrossValidation(Strict):
    groupings: Annotated[list[str], Field(min_length=1)]
    max_folds: Annotated[int, Field(ge=2)] = 10


class Selection(Strict):
    metric: Literal["median_ape"] = "median_ape"


class Intervals(Strict):
    level: Annotated[float, Field(gt=0, lt=1)] = 0.8
    known_folds: Annotated[int, Field(ge=2)] = 5
    min_flag_rows: Count = 20
    widen_factor: Annotated[float, Field(ge=1)] = 1.5
    residual_floor: Positive = 0.01
    min_moe_rows: Count = 30


class Importance(Strict):
    n_repeats: Count = 3


class ModelCompute(Strict):
    openmp_threads: Count = 1
    residual_plot_dpi: Count = 80


class Promotion(Strict):
    min_relative_improvement: NonNegative = 0.01
    promote_refit_on_new_data: bool = True


class Candidate(Strict):
    name: Annotated[str, Field(min_length=1)]
    kind: Annotated[str, Field(min_length=1)]
    params: dict[str, Any] = {}


class Models(Strict):
    """config/models.toml: the token-efficiency model's training."""

    seed: Annotated[int, Field(ge=0)]
    target: Target = Target()
    features: FeatureColumns
    residual_features: FeatureColumns
    structured: Structured
    cv: CrossValidation
    selection: Selection = Selection()
    intervals: Intervals = Intervals()
    importance: Importance = Importance()
    compute: ModelCompute = ModelCompute()
    promotion: Promotion = Promotion()
    candidates: Annotated[list[Candidate], Field(min_length=1)]


def models_config() -> Models:
    """config/models.toml (the entry points load it through tasks/config_files.py and pass it down)."""
    return config.load("models", Models)
