"""The telemetry contract (README.md, "Data contracts") as column names and types.

`NORMALISED_SCHEMA` is what `normalise_runs` returns and what `core.telemetry_runs` stores (plus the
provenance columns), so the feature SQL can rely on every column existing with one type.
"""

from __future__ import annotations

from typing import Literal, get_args

import polars as pl

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
