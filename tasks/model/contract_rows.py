"""Telemetry-contract rows -> the model's feature rows: the one place a prediction's features are engineered.

The registered pyfunc (tasks.model.serving) runs this inside `predict`, with the reference files it carries as
MLflow artifacts; `gpucost predict` and the ranking reach it through that pyfunc. Rows are normalised
(spellings, types: tasks.telemetry.normalise), joined to the GPU specs, shapes and matmul ceilings, and given
their physics bound by the feature SQL (tasks.features), in an in-memory DuckDB (never the warehouse).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl

from tasks.features import build_features
from tasks.reference import ReferenceFiles, ReferenceName, load_reference_tables, read_aliases
from tasks.telemetry.config import Telemetry
from tasks.telemetry.contract import INPUT_KINDS, REQUIRED_COLUMNS
from tasks.telemetry.normalise import load_vocabulary, normalise_runs
from tasks.warehouse import connect

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


def files_digest(files: Mapping[str, Path | str]) -> str:
    """sha256 over the reference files' names and bytes (part of a trained model's fingerprint)."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode("utf-8") + b"\0" + Path(files[name]).read_bytes() + b"\0")
    return digest.hexdigest()


def contract_frame(rows: pd.DataFrame | pl.DataFrame) -> pl.DataFrame:
    """Rows as a caller gives them (CSV text, or pandas' own types: numbers, booleans, all-NaN columns) ->
    polars, contract columns only. Values are parsed (and unreadable ones reported) by normalise_runs."""
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

    vocabulary: Mapping[str, Mapping[str, Any]]    # tasks.telemetry.normalise.load_vocabulary at training
    files: Mapping[str, str]                       # REFERENCE_FILES name -> local path

    @classmethod
    def configured(cls, telemetry: Telemetry, reference: ReferenceFiles) -> ContractFeatures:
        """The vocabulary of config/telemetry.toml and the reference files config/settings.toml [reference] names
        (what a training joins its telemetry with)."""
        files: dict[str, str] = {name: str(reference.path(name)) for name in REFERENCE_FILES}
        return cls(vocabulary=load_vocabulary(telemetry), files=files)

    def with_files(self, files: Mapping[str, str]) -> ContractFeatures:
        return ContractFeatures(vocabulary=self.vocabulary, files=dict(files))

    def build(self, rows: pl.DataFrame) -> tuple[pl.DataFrame, list[str | None]]:
        """Feature rows (build_features output, in input order) and why each row cannot be scored (None: it can)."""

        files = {name: Path(path) for name, path in self.files.items()}
        vocabulary = {k: dict(v) for k, v in self.vocabulary.items()}
        runs = normalise_runs(rows.drop([c for c in IGNORED_INPUT_COLUMNS if c in rows.columns]),
                              read_aliases(files["gpu_aliases"]), vocabulary)
        con = connect(Path(":memory:"))
        try:
            load_reference_tables(con, {"gpu_specs": files["gpu_specs"], "gpu_aliases": files["gpu_aliases"]})
            features = build_features(con, runs, str(files["model_shapes"]), str(files["matmul_ceilings"]))
        finally:
            con.close()
        return features, unscored_reasons(runs, features)


def unscored_reasons(runs: pl.DataFrame, features: pl.DataFrame) -> list[str | None]:
    """Why each row cannot be scored (None when it can). `runs` are normalise_runs output and `features`
    build_features output for the same rows, in the same order."""
    reasons: list[str | None] = []
    for run, feature in zip(runs.iter_rows(named=True), features.iter_rows(named=True), strict=True):
        problems = _run_problems(run) or _feature_problems(run, feature)
        reasons.append("; ".join(problems) or None)
    return reasons


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
    return []


def no_prediction_reason(feature: Mapping[str, Any]) -> str:
    """Why a row the checks let through got no prediction (e.g. the structured model needs the GPU's memory
    bandwidth, which a spec row may lack): said instead of a silent null."""
    missing = [c for c in SPEC_COLUMNS if feature.get(c) is None]
    if missing:
        return f"no prediction: {', '.join(missing)} of {feature['gpu']} missing in gpu_specs.csv"
    return "no prediction: the model returned none for this row"
