"""Workloads to rank for (config/workloads.toml), with the byte sizes of config/ranking.toml resolved."""

from __future__ import annotations

from typing import Any

import polars as pl

from tasks.settings import load_config

WORKLOAD_TYPES = ("pretrain", "sft", "lora", "qlora")

WORKLOAD_SCHEMA: dict[str, pl.DataType] = {
    "workload": pl.String(),
    "description": pl.String(),
    "workload_type": pl.String(),
    "model_name": pl.String(),
    "params_b": pl.Float64(),
    "active_params_b": pl.Float64(),
    "n_layers": pl.Int64(),
    "d_model": pl.Int64(),
    "seq_len": pl.Int64(),
    "precision": pl.String(),
    "fallback_precision": pl.String(),
    "optimizer": pl.String(),
    "token_budget": pl.Float64(),
    "micro_batch": pl.Int64(),
    "global_batch_tokens": pl.Int64(),
    "deadline_hours": pl.Float64(),
    "max_gpus": pl.Int64(),
    "providers": pl.List(pl.String()),
    "regions": pl.List(pl.String()),
    "spot_allowed": pl.Boolean(),
    "weight_bytes": pl.Float64(),
    "grad_bytes": pl.Float64(),
    "master_weight_bytes": pl.Float64(),
    "optimizer_bytes": pl.Float64(),
    "adapter_params_fraction": pl.Float64(),
    "qlora_weight_bytes": pl.Float64(),
    "lora_weight_bytes": pl.Float64(),
    "usable_fraction": pl.Float64(),
}


class WorkloadConfigError(ValueError):
    """config/workloads.toml names something config/ranking.toml does not define, or misses a field."""


def _resolve(entry: dict[str, Any], ranking: dict[str, Any]) -> dict[str, Any]:
    name = entry.get("name")
    for required in ("name", "workload", "params_b", "n_layers", "d_model", "seq_len", "precision", "token_budget"):
        if entry.get(required) is None:
            raise WorkloadConfigError(f"workload {name or '?'}: `{required}` is required")
    if entry["workload"] not in WORKLOAD_TYPES:
        raise WorkloadConfigError(f"workload {name}: workload must be one of {', '.join(WORKLOAD_TYPES)}")
    precision = entry["precision"]
    if precision not in ranking["precisions"]:
        raise WorkloadConfigError(f"workload {name}: precision {precision} has no [precisions.{precision}]")
    optimizer = entry.get("optimizer", "adamw")
    if optimizer not in ranking["optimizers"]:
        known = ", ".join(ranking["optimizers"])
        raise WorkloadConfigError(f"workload {name}: optimizer {optimizer} is not one of {known}")
    sizes = ranking["precisions"][precision]
    memory = ranking["memory"]
    return {
        "workload": name,
        "description": entry.get("description"),
        "workload_type": entry["workload"],
        "model_name": entry.get("model_name"),
        "params_b": entry["params_b"],
        "active_params_b": entry.get("active_params_b", entry["params_b"]),
        "n_layers": entry["n_layers"],
        "d_model": entry["d_model"],
        "seq_len": entry["seq_len"],
        "precision": precision,
        "fallback_precision": ranking.get("precision_fallback", {}).get(precision),
        "optimizer": optimizer,
        "token_budget": entry["token_budget"],
        "micro_batch": entry.get("micro_batch", 1),
        "global_batch_tokens": entry.get("global_batch_tokens"),
        "deadline_hours": entry.get("deadline_hours"),
        "max_gpus": entry.get("max_gpus", ranking["cluster"]["default_max_gpus"]),
        "providers": entry.get("providers"),
        "regions": entry.get("regions"),
        "spot_allowed": entry.get("spot_allowed", True),
        "weight_bytes": sizes["weight_bytes"],
        "grad_bytes": sizes["grad_bytes"],
        "master_weight_bytes": sizes["master_weight_bytes"],
        "optimizer_bytes": ranking["optimizers"][optimizer],
        "adapter_params_fraction": memory["adapter_params_fraction"],
        "qlora_weight_bytes": memory["qlora_weight_bytes"],
        "lora_weight_bytes": memory["lora_weight_bytes"],
        "usable_fraction": memory["usable_fraction"],
    }


def load_workloads(
    workloads: dict[str, Any] | None = None, ranking: dict[str, Any] | None = None
) -> pl.DataFrame:
    """One row per workload (WORKLOAD_SCHEMA), from config/workloads.toml and config/ranking.toml."""
    workloads = workloads if workloads is not None else load_config("workloads")
    ranking = ranking if ranking is not None else load_config("ranking")
    rows = [_resolve(entry, ranking) for entry in workloads.get("workloads", [])]
    names = [row["workload"] for row in rows]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise WorkloadConfigError(f"workload name listed twice: {', '.join(duplicated)}")
    return pl.DataFrame(rows, schema=WORKLOAD_SCHEMA)
