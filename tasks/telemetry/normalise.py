"""Telemetry rows in any spelling -> the contract's vocabulary and types.

Works on any rows in the telemetry contract, including prediction inputs that carry no throughput
columns at all: every contract column is present in the result (null where the input has none).
Columns outside the contract pass through untouched.

Vocabularies (precision family + recipe, workload, activation checkpointing) live in config/telemetry.toml
(data, not code: the whole vocabulary is `load_vocabulary(telemetry)`, so any engine can apply it); GPU names
resolve through the alias table: the exact spelling first, else the spelling trimmed, lower-cased and with runs
of spaces collapsed when that key names one GPU only (`folded_gpus`: "nvidia h100 80gb hbm3" finds "NVIDIA H100
80GB HBM3"; "rtx6000" and "RTX6000" name two GPUs, so "Rtx6000" stays unknown). Values that cannot be read as
their type are not guessed: they become null and are named in `unparsed_fields` (the ingest quarantines such rows).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import polars as pl

from tasks.telemetry.config import Telemetry
from tasks.telemetry.contract import (
    CHECKPOINTING_KINDS,
    INPUT_KINDS,
    LOW_PRECISION_FAMILIES,
    NORMALISED_COLUMNS,
    NORMALISED_SCHEMA,
    PRECISION_FAMILIES,
    WORKLOAD_TYPES,
)
from tasks.values import per_distinct

CONTRACT_PRECISIONS = PRECISION_FAMILIES
CONTRACT_WORKLOADS = WORKLOAD_TYPES
CONTRACT_CHECKPOINTING = CHECKPOINTING_KINDS
DEFAULT_WORKLOAD = "pretrain"

_SPACES = re.compile(r"\s+")


def spelling_key(value: str) -> str:
    """How a free spelling is looked up: trimmed, lower-case, runs of spaces collapsed."""
    return _SPACES.sub(" ", value.strip().lower())


def load_vocabulary(telemetry: Telemetry) -> dict[str, dict[str, Any]]:
    """The spelling tables of config/telemetry.toml (`telemetry`), keyed by `spelling_key`:

    precision / precision_prefix -> (family, recipe); workload -> workload; activation_checkpointing ->
    none | selective | full. Contract values are their own spellings. The values were checked against the
    contract's vocabularies when the file was read (tasks/telemetry/config.py)."""
    cfg = telemetry
    precision = {spelling_key(k): cfg.family_and_recipe(v) for k, v in cfg.precision.items()}
    precision.update({p: (p, "none") for p in CONTRACT_PRECISIONS if p not in LOW_PRECISION_FAMILIES})
    prefix = {spelling_key(k): cfg.family_and_recipe(v) for k, v in cfg.precision_prefix.items()}
    workload = {spelling_key(k): str(v) for k, v in cfg.workload.items()}
    workload.update({w: w for w in CONTRACT_WORKLOADS})
    checkpointing = {spelling_key(k): str(v) for k, v in cfg.activation_checkpointing.items()}
    checkpointing.update({c: c for c in CONTRACT_CHECKPOINTING})
    return {"precision": precision, "precision_prefix": prefix, "workload": workload,
            "activation_checkpointing": checkpointing}


_SEPARATORS = re.compile(r"[\s_\-()]+")


def separator_key(key: str) -> str:
    """A spelling key with "-", "_", parentheses and spaces as one space: "fp8_rowwise", "fp8-rowwise",
    "fp8 (rowwise)" and "FP8 rowwise" are one key."""
    return _SEPARATORS.sub(" ", key).strip()


def precision_of(spelling: str, vocabulary: dict[str, dict[str, Any]]) -> tuple[str, str] | None:
    """(family, recipe) of a precision spelling: the exact key, else the longest matching prefix, else the
    configured spelling it equals but for separators (where every such spelling means the same), else None."""
    key = spelling_key(spelling)
    exact: dict[str, tuple[str, str]] = vocabulary["precision"]
    if key in exact:
        return exact[key]
    prefixes: dict[str, tuple[str, str]] = vocabulary.get("precision_prefix", {})
    for prefix in sorted(prefixes, key=len, reverse=True):
        if key.startswith(prefix):
            return prefixes[prefix]
    meanings = {value for known, value in exact.items() if separator_key(known) == separator_key(key)}
    return meanings.pop() if len(meanings) == 1 else None


def _text(frame: pl.DataFrame, column: str) -> pl.Series:
    """The column as trimmed text (null where absent or empty)."""
    if column not in frame.columns:
        return pl.repeat(None, frame.height, dtype=pl.String, eager=True).rename(column)
    series = frame[column]
    if series.dtype == pl.Boolean:
        series = series.cast(pl.String)
    elif series.dtype != pl.String:
        series = series.cast(pl.String, strict=False)
    series = series.str.strip_chars()
    return series.set(series == "", None) if series.len() else series


def _lookup(text: pl.Series, table: dict[str, Any], dtype: pl.DataType) -> pl.Series:
    return per_distinct(text, lambda t: table.get(spelling_key(t)), dtype)


def _timestamp(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace(" UTC", "+00:00"))
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _parse(text: pl.Series, kind: str, vocabulary: dict[str, dict[str, Any]]) -> pl.Series:
    """A column's trimmed text (`_text`) as its contract kind."""
    if kind in ("text", "precision", "workload"):
        return text
    if kind == "checkpointing":
        return _lookup(text, vocabulary["activation_checkpointing"], pl.String())
    if kind == "float":
        # NaN and inf are no measurement: unparsed (quarantined at ingest, unscored by predict), never a value the
        # suite's range checks would skip as missing
        number = text.cast(pl.Float64, strict=False)
        return number.set(~number.is_finite().fill_null(True), None)
    if kind == "int":
        number = text.cast(pl.Float64, strict=False)
        whole = number.is_finite() & (number == number.floor())
        # strict=False: a whole number beyond Int64 (e.g. 1e308) becomes null, i.e. an unparsed field that
        # quarantines the row, instead of an exception that would abort the whole ingest
        return number.set(~whole.fill_null(False), None).cast(pl.Int64, strict=False)
    if kind == "timestamp":
        return per_distinct(text, _timestamp, pl.Datetime("us", "UTC"))
    raise ValueError(f"unknown column kind {kind!r}")


def canonical_gpus(aliases: pl.DataFrame) -> pl.DataFrame:
    """The alias table plus every canonical id as its own alias (a run may name the GPU by its id)."""
    identity = aliases.select(pl.col("gpu").alias("alias"), "gpu").unique()
    identity = identity.join(aliases.select("alias"), on="alias", how="anti")
    return pl.concat([aliases.select("alias", "gpu"), identity])


def folded_gpus(aliases: pl.DataFrame) -> pl.DataFrame:
    """`canonical_gpus` keyed by `spelling_key` (alias, gpu), keys that name one GPU only: the case-insensitive
    fallback of a GPU name no alias spells exactly. A key two GPUs share (GCP `rtx6000` vs Lambda `RTX6000`) is left
    out, so only the exact spellings find them."""
    lookup = canonical_gpus(aliases)
    folded = pl.DataFrame({"alias": [spelling_key(a) for a in lookup["alias"].to_list()], "gpu": lookup["gpu"]})
    return (folded.unique().group_by("alias").agg(pl.col("gpu").first(), pl.len().alias("n"))
            .filter(pl.col("n") == 1).select("alias", "gpu").sort("alias"))


def gpu_ids(names: pl.Series, aliases: pl.DataFrame) -> pl.Series:
    """Canonical GPU ids of trimmed GPU names (null: unknown): the exact alias, else the folded one."""
    exact = pl.DataFrame({"alias": names}).join(canonical_gpus(aliases), on="alias", how="left",
                                                maintain_order="left")["gpu"]
    keys = per_distinct(names, spelling_key, pl.String())
    folded = pl.DataFrame({"alias": keys}).join(folded_gpus(aliases), on="alias", how="left",
                                                maintain_order="left")["gpu"]
    return exact.fill_null(folded).rename("gpu")


def normalise_runs(
    frame: pl.DataFrame, aliases: pl.DataFrame, vocabulary: dict[str, dict[str, Any]]
) -> pl.DataFrame:
    """Map free spellings to the contract and derive what the contract derives.

    Returns the input's non-contract columns, then every column of NORMALISED_SCHEMA, then
    `workload_name` (as given) and `unparsed_fields` ("column='value'; ..." or null)."""
    parsed: dict[str, pl.Series] = {}
    unparsed: list[pl.Series] = []
    for column, kind in INPUT_KINDS.items():
        text = _text(frame, column)
        values = _parse(text, kind, vocabulary)
        parsed[column] = values
        if kind in ("float", "int", "checkpointing", "timestamp"):
            failed = text.is_not_null() & values.is_null()
            # named with the value as Python's repr shows it; only the failing rows (few) are formatted
            index = failed.arg_true()
            named = pl.repeat(None, frame.height, dtype=pl.String, eager=True).rename(column)
            if index.len():
                named = named.scatter(index, [f"{column}={t!r}" for t in text.gather(index).to_list()])
            unparsed.append(named)

    gpu_names = parsed["gpu"]
    gpu = gpu_ids(gpu_names, aliases)

    family_recipe = per_distinct(
        parsed["precision"], lambda t: "\x1f".join(precision_of(t, vocabulary) or ("", "")), pl.String())
    precision = family_recipe.str.split_exact("\x1f", 1).struct.field("field_0").replace("", None)
    recipe = family_recipe.str.split_exact("\x1f", 1).struct.field("field_1").replace("", None)
    workload_name = parsed["workload"]
    workload = _lookup(workload_name, vocabulary["workload"], pl.String())
    workload = workload.set(workload_name.is_null(), DEFAULT_WORKLOAD) if frame.height else workload

    columns: dict[str, pl.Series] = {
        "run_id": parsed["run_id"],
        "gpu": gpu,
        "gpu_name": gpu_names,
        "precision": precision,
        "precision_name": parsed["precision"],
        "precision_recipe": recipe,
        "workload": workload,
        "mfu_reported": parsed["mfu"],
    }
    for name in NORMALISED_COLUMNS:
        if name not in columns:
            columns[name] = parsed[name]
    normalised = pl.DataFrame(
        {name: columns[name].rename(name) for name in NORMALISED_COLUMNS}, schema=NORMALISED_SCHEMA
    ).with_columns(
        active_params_b=pl.coalesce("active_params_b", "params_b"),
        tokens_per_sec_per_gpu=pl.coalesce(
            "tokens_per_sec_per_gpu",
            pl.when(pl.col("wall_seconds") > 0).then(
                pl.col("tokens_processed") / pl.col("wall_seconds") / pl.col("num_gpus")
            ),
        ),
        workload_name=workload_name,
        unparsed_fields=(
            pl.concat_str([s for s in unparsed], separator="; ", ignore_nulls=True)
            if unparsed
            else pl.lit(None, pl.String)
        ),
    ).with_columns(pl.col("unparsed_fields").replace("", None))
    passthrough = frame.drop([c for c in frame.columns if c in INPUT_KINDS or c in normalised.columns])
    return pl.concat([passthrough, normalised], how="horizontal")


# What the ingest's SQL normalisation (sql/telemetry/normalise_runs.sql) looks up, per column and distinct cell.
SPELLINGS_SCHEMA: dict[str, pl.DataType] = {
    "column_name": pl.String(), "text": pl.String(), "trimmed": pl.String(), "number": pl.Float64(),
    "whole": pl.Int64(), "moment": pl.Datetime("us", "UTC"), "word": pl.String(), "recipe": pl.String(),
    "unparsed": pl.String(),
}
_TARGET = {"float": "number", "int": "whole", "timestamp": "moment", "checkpointing": "word"}


def look_up_spellings(found: dict[str, list[str] | None], vocabulary: dict[str, dict[str, Any]]) -> pl.DataFrame:
    """What `normalise_runs` makes of the cells the SQL normalisation does not read itself
    (sql/telemetry/spellings_to_look_up.sql: each column's distinct cells as read), SPELLINGS_SCHEMA: one row per
    column and cell, with the cell trimmed (`trimmed`; null when blank), its contract value (`number`, `whole`,
    `moment` or `word`, and a precision's `recipe`) and what `unparsed_fields` says of a cell that cannot be read.
    The same code as `normalise_runs`, so that both engines read every cell alike."""
    frames = [pl.DataFrame(schema=SPELLINGS_SCHEMA)]
    for column, cells in found.items():
        if not cells:
            continue
        kind = INPUT_KINDS[column]
        text = _text(pl.DataFrame({column: cells}, schema={column: pl.String}), column)
        values: dict[str, Any] = {"column_name": column, "text": cells, "trimmed": text}
        if kind == "precision":
            pairs = [None if t is None else precision_of(t, vocabulary) for t in text.to_list()]
            values["word"] = [p[0] if p else None for p in pairs]
            values["recipe"] = [p[1] if p else None for p in pairs]
        elif kind == "workload":
            values["word"] = _lookup(text, vocabulary["workload"], pl.String())
        else:
            parsed = _parse(text, kind, vocabulary)
            values[_TARGET[kind]] = parsed
            values["unparsed"] = [f"{column}={t!r}" if t is not None and v is None else None
                                  for t, v in zip(text.to_list(), parsed.to_list(), strict=True)]
        frame = pl.DataFrame(values).with_columns(
            *[pl.lit(None, dtype).alias(name) for name, dtype in SPELLINGS_SCHEMA.items() if name not in values])
        frames.append(frame.select(list(SPELLINGS_SCHEMA)).cast(SPELLINGS_SCHEMA))  # type: ignore[arg-type]
    return pl.concat(frames)


_UNPARSED_CHECKPOINTING = re.compile(r"""activation_checkpointing=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def unknown_spellings(rejected: pl.DataFrame) -> list[str]:
    """Spellings the vocabulary does not know, with their row counts, for the ingest summary:
    ["precision 'int3' x 2", ...] (what to add to config/telemetry.toml). `rejected` are staged rows
    (sql/telemetry/stage_runs.sql columns unknown_precision / unknown_workload, and unparsed_fields)."""
    found: dict[tuple[str, str], int] = {}
    for column, field in (("unknown_precision", "precision"), ("unknown_workload", "workload")):
        if column in rejected.columns:
            for value in rejected[column].drop_nulls().to_list():
                found[(field, repr(value))] = found.get((field, repr(value)), 0) + 1
    if "unparsed_fields" in rejected.columns:
        for text in rejected["unparsed_fields"].drop_nulls().to_list():
            for value in _UNPARSED_CHECKPOINTING.findall(text):
                key = ("activation_checkpointing", value)
                found[key] = found.get(key, 0) + 1
    return [f"{field} {value} × {count}" for (field, value), count in sorted(found.items())]

