"""The telemetry contract (README.md, "Data contracts"): its column names and types, its vocabularies, and the
bounds of a real run (config/telemetry.toml, read into `Telemetry`).

`NORMALISED_SCHEMA` is what the normaliser (tasks/contract/normalise.py) returns and what `core.telemetry_runs`
stores (plus the provenance columns), so the feature SQL can rely on every column existing with one type.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import polars as pl
from pydantic import Field, field_validator, model_validator

from tasks.config import Count, NonNegative, Positive, Strict

# Columns a telemetry FILE must have (a missing one is a file-level error naming it). Throughput is
# required too, as `tokens_per_sec_per_gpu` or as the pair `tokens_processed` + `wall_seconds`.
REQUIRED_COLUMNS: tuple[str, ...] = ("run_id", "gpu", "num_gpus", "params_b", "seq_len", "precision")
THROUGHPUT_COLUMN = "tokens_per_sec_per_gpu"
# The workload types of the contract (telemetry rows and config/workloads.toml entries alike).
WorkloadType = Literal["pretrain", "sft", "lora", "qlora"]
WORKLOAD_TYPES: tuple[WorkloadType, ...] = get_args(WorkloadType)
# The contract's other vocabularies (config/telemetry.toml maps free spellings onto these).
PrecisionFamily = Literal["fp32", "tf32", "fp16", "bf16", "fp8", "fp4"]
PRECISION_FAMILIES: tuple[PrecisionFamily, ...] = get_args(PrecisionFamily)
PrecisionRecipe = Literal["none", "delayed", "current", "tensorwise", "rowwise", "blockwise", "mx", "nv"]
PRECISION_RECIPES: tuple[PrecisionRecipe, ...] = get_args(PrecisionRecipe)
CheckpointingKind = Literal["none", "selective", "full"]
CHECKPOINTING_KINDS: tuple[CheckpointingKind, ...] = get_args(CheckpointingKind)
LOW_PRECISION_FAMILIES: tuple[str, ...] = ("fp8", "fp4")  # families whose runs name a scaling recipe
THROUGHPUT_PAIR: tuple[str, str] = ("tokens_processed", "wall_seconds")
# What the MLflow reader derives from a run itself: a mapping (config/mlflow_telemetry.toml) cannot set these.
MLFLOW_READER_FIELDS: tuple[str, ...] = ("run_id", "recorded_at", "source", "tokens_per_sec_per_gpu", "avg_power_w")

# Contract columns as read: name -> kind ("text", "float", "int", "timestamp", or a vocabulary: "precision",
# "workload", "checkpointing").
INPUT_KINDS: dict[str, str] = {
    "run_id": "text",
    "gpu": "text",
    "num_gpus": "int",
    "params_b": "float",
    "active_params_b": "float",
    "seq_len": "int",
    "precision": "precision",
    "tokens_per_sec_per_gpu": "float",
    "tokens_processed": "float",
    "wall_seconds": "float",
    "recorded_at": "timestamp",
    "model_name": "text",
    "micro_batch": "int",
    "global_batch_tokens": "int",
    "workload": "workload",
    "parallelism": "text",
    "activation_checkpointing": "checkpointing",
    "framework": "text",
    "optimizer": "text",
    "learning_rate": "float",
    "avg_power_w": "float",
    "mfu": "float",
    "n_layers": "int",
    "d_model": "int",
    "moe_experts": "int",
    "moe_top_k": "int",
    "moe_expert_ffn": "int",
    "moe_shared_experts": "int",
    "scale_up_domain_gpus": "int",
    "scale_out_gbps_per_gpu": "float",
    "source": "text",
    "quality_flag": "text",
}

# The normalised run: contract values in the contract's vocabulary, plus the spellings as given.
NORMALISED_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "gpu": pl.String(),                      # canonical GPU id (data/reference/gpu_aliases.csv)
    "gpu_name": pl.String(),                 # the GPU as the source spelled it
    "num_gpus": pl.Int64(),
    "model_name": pl.String(),
    "params_b": pl.Float64(),                # total parameters, billions
    "active_params_b": pl.Float64(),         # parameters active per token, billions (MoE); default params_b
    "n_layers": pl.Int64(),
    "d_model": pl.Int64(),
    # MoE shape (override data/reference/model_shapes.csv): routed experts, experts per token, FFN size of one
    # expert, shared experts (always-on, each of moe_expert_ffn)
    "moe_experts": pl.Int64(),
    "moe_top_k": pl.Int64(),
    "moe_expert_ffn": pl.Int64(),
    "moe_shared_experts": pl.Int64(),
    # the machine (default: the GPU system's, data/reference/gpu_specs.csv)
    "scale_up_domain_gpus": pl.Int64(),      # GPUs sharing NVLink / xGMI (1: none)
    "scale_out_gbps_per_gpu": pl.Float64(),  # network per GPU beyond the domain, Gb/s (gigabits per second)
    "seq_len": pl.Int64(),                   # tokens
    "precision": pl.String(),                # family (the matmuls' peak): fp32 | tf32 | fp16 | bf16 | fp8 | fp4
    "precision_name": pl.String(),           # the precision as the source spelled it
    "precision_recipe": pl.String(),         # none | delayed | current | tensorwise | rowwise | blockwise | mx | nv
    "workload": pl.String(),                 # pretrain | sft | lora | qlora
    "micro_batch": pl.Int64(),               # sequences per GPU per micro-step
    "global_batch_tokens": pl.Int64(),       # tokens per optimizer step, all GPUs
    "parallelism": pl.String(),
    "activation_checkpointing": pl.String(), # none | selective | full
    "framework": pl.String(),
    "optimizer": pl.String(),
    "learning_rate": pl.Float64(),
    "avg_power_w": pl.Float64(),             # W per GPU
    "mfu_reported": pl.Float64(),            # the source's own MFU (definitions differ; not used as a feature)
    "tokens_processed": pl.Float64(),        # tokens, all GPUs
    "wall_seconds": pl.Float64(),            # s
    "tokens_per_sec_per_gpu": pl.Float64(),  # tokens/s per GPU (given, or tokens_processed / wall_seconds / num_gpus)
    "recorded_at": pl.Datetime("us", "UTC"),
    "source": pl.String(),
    "quality_flag": pl.String(),             # the source's own doubt about the row; flagged runs are not trained on
}

NORMALISED_COLUMNS: tuple[str, ...] = tuple(NORMALISED_SCHEMA)
# Optional columns added after records were first stored: they enter a record's hash only where given, so a
# record stored before them keeps its hash (re-ingesting it changes nothing).
LATE_OPTIONAL_COLUMNS: tuple[str, ...] = ("moe_experts", "moe_top_k", "moe_expert_ffn", "moe_shared_experts",
                                          "scale_up_domain_gpus", "scale_out_gbps_per_gpu")

# The feature columns (contract 1, names fixed), in order. build_features returns exactly these.
FEATURE_COLUMNS: tuple[str, ...] = (
    "run_id", "gpu", "num_gpus", "log2_num_gpus", "params_b", "active_params_b", "is_moe", "seq_len",
    "precision", "precision_recipe", "workload", "micro_batch", "global_batch_tokens", "tokens_per_gpu_per_step",
    "activation_checkpointing", "framework", "parallelism", "optimizer", "learning_rate", "source", "source_group",
    "peak_tflops", "peak_16bit_tflops", "matmul_ceiling_16bit", "matmul_ceiling_lowp", "matmul_ceiling_power_w",
    "gpu_memory_gb", "mem_bandwidth_tbps", "tdp_w", "intra_node_bw_gbps_unidir",
    "flops_per_token", "attention_flops_per_token", "attention_term_known", "n_layers", "d_model",
    "params_per_gpu_b", "memory_pressure_params_per_gb", "physics_bound_tokens_per_sec_per_gpu",
    "tokens_per_sec_per_gpu", "achieved_tflops_per_gpu", "mfu", "quality_flag",
    # the model's shape beyond layers x width (row, else model_shapes.csv; MoE: else estimated by the model)
    "n_heads", "n_kv_heads", "head_dim", "attention_layers", "vocab", "ffn_matrices", "moe_experts", "moe_top_k",
    "moe_expert_ffn", "moe_shared_experts", "moe_dense_layers", "moe_shape_source",
    # the machine: given by the row, else the GPU system's default (flagged)
    "scale_up_domain_gpus", "scale_up_gbps_per_gpu", "scale_out_gbps_per_gpu", "scale_up_defaulted",
    "scale_out_defaulted",
    # the MoE model's family (DeepSeek, Qwen, GPT-OSS, ...; null for dense): the leave-one-MoE-family-out CV groups
    "moe_family",
)


class PrecisionSpec(Strict):
    family: PrecisionFamily
    recipe: PrecisionRecipe

    @field_validator("recipe")
    @classmethod
    def _recipe_fits_family(cls, recipe: str, info: Any) -> str:
        family = info.data.get("family")
        if family is not None and (family in LOW_PRECISION_FAMILIES) != (recipe != "none"):
            raise ValueError(f"fp8/fp4 name their recipe, other families have recipe 'none' (got {family} {recipe})")
        return recipe


Family = PrecisionFamily


def plain_number(value: float) -> str:
    """A whole number in full (1000001, not 1e+06, which reads as the bound 1000000), other numbers as %g."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def outside_bounds(column: str, value: str, low: float, high: float) -> str:
    """Why `value` (as the row gives it) is outside TelemetryValidation.column_bounds: the words `gpucost predict`
    says of a cell and the registered model of a row."""
    return f"{column} {value} outside {plain_number(low)}..{plain_number(high)} (config/telemetry.toml [validation])"


class TelemetryValidation(Strict):
    """config/telemetry.toml [validation]: the physical bounds of a training run (expectations/telemetry.json)."""

    # a run's implied model FLOP/s per GPU over the GPU's dense peak for its precision
    min_implied_peak_ratio: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.005
    max_implied_peak_ratio: Positive = 1.0
    max_num_gpus: Count = 250_000                  # GPUs in one run
    min_params_b: Positive = 0.01                  # parameters, billions
    max_params_b: Positive = 100_000.0
    max_seq_len: Count = 100_000_000               # tokens
    max_micro_batch: Count = 100_000               # sequences per GPU per micro-step
    # the shape and machine columns a row may give (the reference files' largest: 128 layers, d_model 25,600,
    # 384 routed experts, expert FFN 32,768, 800 Gb/s per GPU); beyond them the physics overflows into nonsense
    max_n_layers: Count = 10_000
    max_d_model: Count = 1_000_000                 # hidden size
    max_moe_experts: Count = 100_000               # routed experts (bounds top-k and shared experts too)
    max_moe_expert_ffn: Count = 1_000_000          # FFN size of one expert
    max_scale_out_gbps_per_gpu: Positive = 100_000.0   # network per GPU beyond the scale-up domain, Gb/s
    max_future_hours: NonNegative = 24.0           # hours after the ingest a run's recorded_at may be

    def column_bounds(self) -> dict[str, tuple[float, float]]:
        """Contract column -> (lowest, highest) a real run can have, both included: what the suite's
        range expectations check at ingest and what `gpucost predict` holds its input rows to."""
        return {
            "num_gpus": (1, self.max_num_gpus),
            "params_b": (self.min_params_b, self.max_params_b),
            "active_params_b": (self.min_params_b, self.max_params_b),
            "seq_len": (1, self.max_seq_len),
            "micro_batch": (1, self.max_micro_batch),
            "n_layers": (1, self.max_n_layers),
            "d_model": (1, self.max_d_model),
            "moe_experts": (1, self.max_moe_experts),
            "moe_top_k": (1, self.max_moe_experts),
            "moe_shared_experts": (0, self.max_moe_experts),
            "moe_expert_ffn": (1, self.max_moe_expert_ffn),
            "scale_up_domain_gpus": (1, self.max_num_gpus),
            # 0 itself is refused too (a network of no bandwidth: the suite's strict minimum)
            "scale_out_gbps_per_gpu": (0, self.max_scale_out_gbps_per_gpu),
        }

    @model_validator(mode="after")
    def _floor_below_ceiling(self) -> TelemetryValidation:
        if self.min_implied_peak_ratio >= self.max_implied_peak_ratio:
            raise ValueError("min_implied_peak_ratio must be below max_implied_peak_ratio")
        return self


class Telemetry(Strict):
    """config/telemetry.toml: the spelling tables and the validation threshold."""

    validation: TelemetryValidation = TelemetryValidation()
    precision: dict[str, Family | PrecisionSpec] = {}
    precision_prefix: dict[str, PrecisionSpec] = {}
    workload: dict[str, WorkloadType] = {}
    activation_checkpointing: dict[str, CheckpointingKind] = {}

    @field_validator("precision")
    @classmethod
    def _low_precision_names_its_recipe(cls, table: dict[str, Any]) -> dict[str, Any]:
        for key, value in table.items():
            if isinstance(value, str) and value in LOW_PRECISION_FAMILIES:
                raise ValueError(f"{key!r} = {value!r}: fp8/fp4 spellings name their recipe, e.g. "
                                 f'{{ family = "{value}", recipe = "delayed" }}')
        return table

    def family_and_recipe(self, value: str | PrecisionSpec) -> tuple[str, str]:
        """A [precision] value: "bf16" (family, recipe none) or { family = "fp8", recipe = "rowwise" }."""
        return (value, "none") if isinstance(value, str) else (value.family, value.recipe)
