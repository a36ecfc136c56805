"""Telemetry-contract rows -> the model's feature rows: the one place a prediction's features are engineered.

The registered pyfunc (tasks.model.serving) runs this inside `predict`, with the reference files it carries as
MLflow artifacts; `gpucost predict` and the ranking reach it through that pyfunc. Rows are normalised by the
contract's one normaliser (spellings, types: tasks.contract.normalise, the ingest's own SQL), joined to the GPU
specs, shapes and matmul ceilings, and given their physics bound by the feature SQL (tasks.contract.features), all
in one in-memory DuckDB (never the warehouse).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import polars as pl

from tasks.contract.features import build_features
from tasks.contract.normalise import load_vocabulary, normalise_rows
from tasks.contract.parallelism import parse_parallelism
from tasks.contract.schema import INPUT_KINDS, REQUIRED_COLUMNS, Telemetry, outside_bounds, plain_number
from tasks.reference import ReferenceFiles, ReferenceName, load_reference_tables, read_aliases
from tasks.sql_files import execute

# What a prediction needs: the contract's required columns except the run id (throughput is what it predicts).
PREDICTION_REQUIRED_COLUMNS = tuple(c for c in REQUIRED_COLUMNS if c != "run_id")
# Throughput columns of a prediction input are ignored (never passed to the features).
IGNORED_INPUT_COLUMNS = ("tokens_per_sec_per_gpu", "tokens_processed", "wall_seconds", "mfu")
# The columns a caller may give (the model's signature): the contract's, without throughput.
CONTRACT_INPUT_COLUMNS = tuple(c for c in INPUT_KINDS if c not in IGNORED_INPUT_COLUMNS)
# GPU spec columns a model may need beyond the peak (the structured model: memory bandwidth for memory-bound work)
SPEC_COLUMNS = ("peak_tflops", "mem_bandwidth_tbps")
# The reference files the features read (config/settings.toml [reference]); a registered model carries copies.
REFERENCE_FILES: tuple[ReferenceName, ...] = ("gpu_specs", "gpu_aliases", "model_shapes", "matmul_ceilings")
# What the in-memory database the features are built in needs before the reference tables: their schema and the
# FLOPs macros the feature SQL calls (none of the warehouse's DDL: a prediction never reads or writes its tables).
MEMORY_SETUP = ("contract/reference_schema", "contract/flops_macros")


def files_digest(files: Mapping[str, Path | str]) -> str:
    """sha256 over the reference files' names and bytes (part of a trained model's fingerprint)."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode("utf-8") + b"\0" + Path(files[name]).read_bytes() + b"\0")
    return digest.hexdigest()


def contract_frame(rows: pd.DataFrame | pl.DataFrame) -> pl.DataFrame:
    """Rows as a caller gives them (CSV text, or pandas' own types: numbers, booleans, all-NaN columns) ->
    polars, contract columns only. Values are parsed (and unreadable ones reported) by the normaliser."""
    if isinstance(rows, pl.DataFrame):
        return rows.select([c for c in CONTRACT_INPUT_COLUMNS if c in rows.columns])
    columns = {}
    for name in (c for c in CONTRACT_INPUT_COLUMNS if c in rows.columns):
        values = rows[name]
        if values.dtype == object or isinstance(values.dtype, pd.StringDtype):
            # mixed Python objects (text, numbers, None): as text, missing stays missing
            columns[name] = pl.Series(name, [None if pd.isna(v) else str(v) for v in values], dtype=pl.String)
        else:
            columns[name] = pl.from_pandas(values.rename(name), nan_to_null=True)
    return pl.DataFrame(columns, height=len(rows))


@dataclass(frozen=True)
class ContractFeatures:
    """How contract rows become feature rows: the spelling vocabulary and the reference files."""

    vocabulary: Mapping[str, Mapping[str, Any]]    # tasks.contract.normalise.load_vocabulary at training
    files: Mapping[str, str]                       # REFERENCE_FILES name -> local path
    # config/telemetry.toml [validation] bounds at training, (column, lowest, highest): a row outside them is not
    # scored, as the ingest quarantines it (versions registered before: none, those rows scored as they were)
    limits: tuple[tuple[str, float, float], ...] = ()

    @classmethod
    def configured(cls, telemetry: Telemetry, reference: ReferenceFiles) -> ContractFeatures:
        """The vocabulary of config/telemetry.toml and the reference files config/settings.toml [reference] names
        (what a training joins its telemetry with)."""
        files: dict[str, str] = {name: str(reference.path(name)) for name in REFERENCE_FILES}
        limits = tuple((column, float(low), float(high))
                       for column, (low, high) in telemetry.validation.column_bounds().items())
        return cls(vocabulary=load_vocabulary(telemetry), files=files, limits=limits)

    def with_files(self, files: Mapping[str, str]) -> ContractFeatures:
        return ContractFeatures(vocabulary=self.vocabulary, files=dict(files), limits=self.limits)

    def build(self, rows: pl.DataFrame) -> tuple[pl.DataFrame, list[str | None]]:
        """Feature rows (build_features output, in input order) and why each row cannot be scored (None: it can)."""

        files = {name: Path(path) for name, path in self.files.items()}
        con = duckdb.connect(":memory:")
        try:
            for name in MEMORY_SETUP:
                execute(con, name)
            load_reference_tables(con, {"gpu_specs": files["gpu_specs"], "gpu_aliases": files["gpu_aliases"]})
            runs = normalise_rows(con, rows.drop([c for c in IGNORED_INPUT_COLUMNS if c in rows.columns]),
                                  read_aliases(files["gpu_aliases"]), self.vocabulary)
            features = build_features(con, runs, str(files["model_shapes"]), str(files["matmul_ceilings"]))
        finally:
            con.close()
        return features, unscored_reasons(runs, features, self.limits)


# number columns a text such as "NaN" or "inf" reads into as a float
FINITE_COLUMNS = ("params_b", "active_params_b", "scale_out_gbps_per_gpu")
def unscored_reasons(runs: pl.DataFrame, features: pl.DataFrame,
                     limits: tuple[tuple[str, float, float], ...] = ()) -> list[str | None]:
    """Why each row cannot be scored (None when it can). `runs` are normalise_rows output and `features`
    build_features output for the same rows, in the same order; `limits` the config/telemetry.toml [validation]
    bounds, (column, lowest, highest) (TelemetryValidation.column_bounds)."""
    reasons: list[str | None] = []
    for run, feature in zip(runs.iter_rows(named=True), features.iter_rows(named=True), strict=True):
        problems = (_run_problems(run) + _machine_problems(run) + _bound_problems(run, limits)
                    or _feature_problems(run, feature))
        reasons.append("; ".join(problems) or None)
    return reasons


def _bound_problems(run: Mapping[str, Any], limits: tuple[tuple[str, float, float], ...]) -> list[str]:
    """Values beyond what any real run has (the ingest's [validation] bounds, which quarantine such telemetry).
    A value of 0 or below, or not finite, is named by the other checks."""
    problems = []
    for column, low, high in limits:
        value = run.get(column)
        if value is None or not 0 < value < math.inf:
            continue
        if value < low or value > high:
            problems.append(outside_bounds(column, plain_number(value), low, high))
    return problems


def _machine_problems(run: Mapping[str, Any]) -> list[str]:
    """Machine, batch and MoE values no run can have: a network of no bandwidth, a scale-up domain of no GPU, an MoE
    shape routing a token to more experts than there are, more active parameters than parameters."""
    problems = [f"{column} must be a finite number (got {value})" for column in FINITE_COLUMNS
                if isinstance(value := run.get(column), float) and not math.isfinite(value)]
    if problems:
        return problems
    for column, floor in (("scale_up_domain_gpus", 1), ("moe_experts", 1), ("moe_top_k", 1), ("moe_expert_ffn", 1),
                          ("micro_batch", 1), ("global_batch_tokens", 1), ("n_layers", 1), ("d_model", 1)):
        value = run.get(column)
        if value is not None and value < floor:
            problems.append(f"{column} must be at least {floor}")
    shared = run.get("moe_shared_experts")
    if shared is not None and shared < 0:
        problems.append("moe_shared_experts must be 0 or more")
    out = run.get("scale_out_gbps_per_gpu")
    if out is not None and not out > 0:
        problems.append("scale_out_gbps_per_gpu must be above 0 (Gb/s per GPU)")
    experts, top_k = run.get("moe_experts"), run.get("moe_top_k")
    if experts is not None and top_k is not None and experts >= 1 and top_k > experts:
        problems.append(f"moe_top_k {top_k} exceeds moe_experts {experts}")
    total, active = run.get("params_b"), run.get("active_params_b")
    if total is not None and active is not None:
        if not active > 0:
            problems.append("active_params_b must be above 0")
        elif active > total:
            problems.append(f"active_params_b {active:g} exceeds params_b {total:g}")
    if run.get("workload") is None and run.get("workload_name") is not None:
        problems.append(f"unknown workload {run['workload_name']!r} (pretrain, sft, lora or qlora; spellings in "
                        f"config/telemetry.toml [workload])")
    return problems


def _run_problems(run: Mapping[str, Any]) -> list[str]:
    """What the run itself lacks or gets wrong: its GPU, its precision, unreadable or missing values."""
    problems = []
    if run.get("gpu_name") is None:
        problems.append("no gpu given")
    elif run.get("gpu") is None:
        problems.append(f"unknown GPU {run['gpu_name']!r} (not in gpu_aliases.csv)")
    if run.get("precision_name") is None:
        problems.append("no precision given")
    elif run.get("precision") is None:
        problems.append(f"unknown precision {run['precision_name']!r}")
    if run.get("unparsed_fields"):
        problems.append(f"unreadable values: {run['unparsed_fields']}")
    for column, rule in (("num_gpus", "at least 1"), ("params_b", "above 0"), ("seq_len", "above 0")):
        value = run.get(column)
        if value is None:
            if f"{column}=" not in (run.get("unparsed_fields") or ""):
                problems.append(f"missing {column}")
        elif value <= 0 or (column == "num_gpus" and value < 1):
            problems.append(f"{column} must be {rule}")
    return problems


def _feature_problems(run: Mapping[str, Any], feature: Mapping[str, Any]) -> list[str]:
    """What the features of a sound run lack: the GPU's spec row, its dense peak, the physics bound."""
    if feature.get("gpu_memory_gb") is None and feature.get("peak_tflops") is None:
        return [f"no spec row for GPU {run['gpu']!r} in gpu_specs.csv"]
    if feature.get("peak_tflops") is None:
        return [f"no dense {run['precision']} peak for {run['gpu']} in gpu_specs.csv"]
    if feature.get("physics_bound_tokens_per_sec_per_gpu") is None:
        return ["physics bound cannot be computed (FLOPs per token unknown)"]
    problem = layout_problem(feature.get("is_moe"), feature.get("moe_experts"), run.get("parallelism"))
    return [problem] if problem else []


def layout_problem(is_moe: Any, moe_experts: Any, parallelism: Any) -> str | None:
    """Why a run's layout is impossible for its model (None when it is not): more expert-parallel ranks than routed
    experts. A prediction input so laid out is unscored; a stored run so laid out is kept out of training."""
    ep = parse_parallelism(parallelism if isinstance(parallelism, str) else None).ep
    if is_moe and moe_experts is not None and not pd.isna(moe_experts) and ep > moe_experts:
        return (f"EP {ep} exceeds the model's {int(moe_experts)} routed experts (an expert-parallel rank would hold "
                "none)")
    return None


def no_prediction_reason(feature: Mapping[str, Any]) -> str:
    """Why a row the checks let through got no prediction (e.g. the structured model needs the GPU's memory
    bandwidth, which a spec row may lack): said instead of a silent null."""
    missing = [c for c in SPEC_COLUMNS if feature.get(c) is None]
    if missing:
        return f"no prediction: {', '.join(missing)} of {feature['gpu']} missing in gpu_specs.csv"
    return "no prediction: the model returned none for this row"
