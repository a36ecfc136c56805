"""Workloads to rank for (config/workloads.toml), with the byte sizes of config/ranking.toml resolved."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Annotated, Any

import polars as pl
from pydantic import Field, PrivateAttr, ValidationError, model_validator

from tasks import config
from tasks.config import Positive, Strict
from tasks.contract.schema import WorkloadType
from tasks.ranking.config import Ranking
from tasks.settings import ConfigError, config_dir

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
    "moe_experts": pl.Int64(),
    "moe_top_k": pl.Int64(),
    "moe_expert_ffn": pl.Int64(),
    "moe_shared_experts": pl.Int64(),
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
    "checkpoints_kept": pl.Int64(),
}


class WorkloadConfigError(ConfigError):
    """config/workloads.toml has a key of the wrong type, sign or range, names something config/ranking.toml
    does not define, or defines no workload. The message names the file, the workload and the key."""


# Plausible ranges: anything outside is a typo (a sign, a unit, a missing or extra digit), not a workload.
Billions = Annotated[float, Field(gt=0, le=100_000, allow_inf_nan=False)]    # parameters, 1e9 (100T max)


class Workload(Strict):
    """One [[workloads]] entry. Strict: "32" is not 32, true is not 1; unknown keys are typos."""

    name: Annotated[str, Field(min_length=1, max_length=200)]
    description: str | None = None
    workload: WorkloadType
    model_name: str | None = None
    params_b: Billions
    active_params_b: Billions | None = None
    n_layers: Annotated[int, Field(gt=0, le=10_000)]
    d_model: Annotated[int, Field(gt=0, le=1_000_000)]
    seq_len: Annotated[int, Field(gt=0, le=100_000_000)]                      # tokens per sequence
    precision: str
    optimizer: str = "adamw"
    token_budget: Annotated[float, Field(gt=0, le=1e17, allow_inf_nan=False)]  # tokens (1e17: 100x any run so far)
    micro_batch: Annotated[int, Field(gt=0, le=1_000_000)] = 1
    global_batch_tokens: Annotated[int, Field(gt=0, le=10**12)] | None = None
    # MoE shape (the telemetry contract's optional columns): routed experts, experts per token, expert FFN
    # hidden size, shared experts. None = from data/reference/model_shapes.csv by model_name, else estimated.
    moe_experts: Annotated[int, Field(gt=0, le=100_000)] | None = None
    moe_top_k: Annotated[int, Field(gt=0, le=100_000)] | None = None
    moe_expert_ffn: Annotated[int, Field(gt=0, le=1_000_000)] | None = None
    moe_shared_experts: Annotated[int, Field(ge=0, le=100_000)] | None = None
    deadline_hours: Annotated[Positive, Field(le=1_000_000)] | None = None     # 1e6 h = 114 years
    max_gpus: Annotated[int, Field(gt=0, le=10_000_000)] | None = None
    providers: list[Annotated[str, Field(min_length=1)]] | None = None
    regions: list[Annotated[str, Field(min_length=1)]] | None = None
    spot_allowed: bool = True
    checkpoints_kept: Annotated[int, Field(ge=0, le=1_000_000)] = 0  # kept in storage during the run (count)

    @model_validator(mode="after")
    def _active_within_total(self) -> Workload:
        if self.active_params_b is not None and self.active_params_b > self.params_b:
            raise ValueError(f"active_params_b {self.active_params_b} is more than params_b {self.params_b}")
        if self.moe_top_k is not None and self.moe_experts is not None and self.moe_top_k > self.moe_experts:
            raise ValueError(f"moe_top_k {self.moe_top_k} is more than moe_experts {self.moe_experts}")
        return self


def _describe(error: Mapping[str, Any]) -> str:
    key = ".".join(str(part) for part in error["loc"]) or "entry"
    if error["type"] == "extra_forbidden":
        return f"{key} is not a workload key (a typo?)"
    if error["type"] == "missing":
        return f"{key} is required"
    value = error.get("input")
    return f"{key} = {value!r}: {error['msg'].removeprefix('Value error, ')}"


def entry_workload(entry: Any, file: str, index: int) -> Workload:
    """One [[workloads]] table as a Workload, or WorkloadConfigError naming the file, the workload and every bad
    key."""
    name = entry.get("name") if isinstance(entry, dict) else None
    label = f"workload {name}" if isinstance(name, str) and name else f"workload #{index + 1}"
    if not isinstance(entry, dict):
        raise WorkloadConfigError(f"{file}: {label} is not a [[workloads]] table")
    try:
        return Workload.model_validate(entry)
    except ValidationError as error:
        problems = "; ".join(_describe(e) for e in error.errors(include_url=False))
        raise WorkloadConfigError(f"{file}: {label}: {problems}") from None


class WorkloadsFile(Strict):
    """config/workloads.toml: its [[workloads]] entries, each a Workload. Read by `workloads_config` (or
    `workloads_from` for tables in hand), which names a bad entry by its workload; what an entry names in
    config/ranking.toml (precision, optimizer) is checked against it by `load_workloads`."""

    workloads: list[Workload] = []
    _file: str = PrivateAttr("config/workloads.toml")  # where it was read: error messages name it

    @property
    def file(self) -> str:
        return self._file


def workloads_from(tables: dict[str, Any], file: str = "config/workloads.toml") -> WorkloadsFile:
    """The tables of a workloads file (read from `file`) as a WorkloadsFile, or WorkloadConfigError naming the file
    (and the workload, for a bad entry)."""
    unknown = sorted(set(tables) - {"workloads"})
    if unknown:
        raise WorkloadConfigError(f"{file}: {unknown[0]}: unknown key (a typo? the keys here are workloads)")
    entries = tables.get("workloads", [])
    if not isinstance(entries, list):
        raise WorkloadConfigError(f"{file}: `workloads` must be a list of [[workloads]] tables")
    loaded = WorkloadsFile(workloads=[entry_workload(entry, file, i) for i, entry in enumerate(entries)])
    loaded._file = file
    return loaded


def validate_workload(workload: Workload, ranking: Ranking, file: str) -> Workload:
    """The workload, or WorkloadConfigError when it names a precision or optimizer config/ranking.toml does not
    define."""
    label = f"workload {workload.name}"
    if workload.precision not in ranking.precisions:
        known = ", ".join(ranking.precisions)
        raise WorkloadConfigError(
            f"{file}: {label}: precision {workload.precision} is unknown (config/ranking.toml defines {known})")
    if workload.optimizer not in ranking.optimizers:
        known = ", ".join(ranking.optimizers)
        raise WorkloadConfigError(f"{file}: {label}: optimizer {workload.optimizer} is not one of {known}")
    return workload


def _resolve(workload: Workload, ranking: Ranking) -> dict[str, Any]:
    sizes = ranking.precisions[workload.precision]
    memory = ranking.memory
    return {
        "workload": workload.name,
        "description": workload.description,
        "workload_type": workload.workload,
        "model_name": workload.model_name,
        "params_b": workload.params_b,
        "active_params_b": workload.active_params_b if workload.active_params_b is not None else workload.params_b,
        "n_layers": workload.n_layers,
        "d_model": workload.d_model,
        "seq_len": workload.seq_len,
        "precision": workload.precision,
        "fallback_precision": ranking.precision_fallback.get(workload.precision),
        "optimizer": workload.optimizer,
        "token_budget": workload.token_budget,
        "micro_batch": workload.micro_batch,
        "global_batch_tokens": workload.global_batch_tokens,
        "moe_experts": workload.moe_experts,
        "moe_top_k": workload.moe_top_k,
        "moe_expert_ffn": workload.moe_expert_ffn,
        "moe_shared_experts": workload.moe_shared_experts,
        "deadline_hours": workload.deadline_hours,
        "max_gpus": workload.max_gpus if workload.max_gpus is not None else ranking.cluster.default_max_gpus,
        "providers": workload.providers,
        "regions": workload.regions,
        "spot_allowed": workload.spot_allowed,
        "weight_bytes": sizes.weight_bytes,
        "grad_bytes": sizes.grad_bytes,
        "master_weight_bytes": sizes.master_weight_bytes,
        "optimizer_bytes": ranking.optimizers[workload.optimizer],
        "adapter_params_fraction": memory.adapter_params_fraction,
        "qlora_weight_bytes": memory.qlora_weight_bytes,
        "lora_weight_bytes": memory.lora_weight_bytes,
        "usable_fraction": memory.usable_fraction,
        "checkpoints_kept": workload.checkpoints_kept,
    }


def workloads_file() -> str:
    return str(config_dir() / "workloads.toml")


def load_workloads(workloads: WorkloadsFile | dict[str, Any], ranking: Ranking) -> pl.DataFrame:
    """One row per workload (WORKLOAD_SCHEMA), from config/workloads.toml as loaded (or the plain tables
    `workloads`, which name no file) and config/ranking.toml."""
    if not isinstance(workloads, WorkloadsFile):
        workloads = workloads_from(workloads)
    file = workloads.file
    rows = [_resolve(validate_workload(entry, ranking, file), ranking) for entry in workloads.workloads]
    # counted once (a list's count() per name made 20,000 workloads take 23 s)
    duplicated = sorted(name for name, times in Counter(row["workload"] for row in rows).items() if times > 1)
    if duplicated:
        raise WorkloadConfigError(f"{file}: workload name listed twice: {', '.join(duplicated)}")
    return pl.DataFrame(rows, schema=WORKLOAD_SCHEMA)


def require_workloads(workloads: pl.DataFrame) -> None:
    """A night with no workload publishes nothing: refuse it (the previous night stays served)."""
    if workloads.is_empty():
        raise WorkloadConfigError(
            f"{workloads_file()} defines no [[workloads]]: nothing to rank; nothing was published and the "
            "previous night stays served")


def workloads_config() -> WorkloadsFile:
    """config/workloads.toml (the entry points load it through tasks/config_files.py and pass it down)."""
    return workloads_from(config.read_toml("workloads"), workloads_file())
