"""Telemetry rows in any spelling -> the contract's vocabulary and types: ONE normaliser, DuckDB SQL (sql/contract/),
run on the connection a caller gives. The ingest runs it on the warehouse connection over the records it staged
(`normalised_records`); `gpucost predict` and the registered model over their rows on an in-memory DuckDB
(`normalise_rows`).

The SQL reads every cell in plain form itself: text trimmed, plain numbers and timestamps (sql/contract/rules.sql).
The few cells it does not read so (every spelling of the vocabulary columns, and numbers and timestamps in another
form) it looks up in `telemetry_spellings`, which `look_up_spellings` makes once per distinct cell: that lookup is
part of the one engine, never a second one.

Vocabularies (precision family + recipe, workload, activation checkpointing) live in config/telemetry.toml
(`load_vocabulary`); GPU names resolve through the alias table: the exact spelling first, else the spelling trimmed,
lower-cased and with runs of spaces collapsed when that key names one GPU only (`folded_gpus`: "nvidia h100 80gb
hbm3" finds "NVIDIA H100 80GB HBM3"; "rtx6000" and "RTX6000" name two GPUs, so "Rtx6000" stays unknown). Values that
cannot be read as their type are not guessed: they become null and are named in `unparsed_fields` (the ingest
quarantines such rows, predict leaves them unscored).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from tasks.contract.schema import (
    CHECKPOINTING_KINDS,
    INPUT_KINDS,
    LOW_PRECISION_FAMILIES,
    NORMALISED_COLUMNS,
    PRECISION_FAMILIES,
    WORKLOAD_TYPES,
    Telemetry,
)
from tasks.sql_files import execute, query, registered

Vocabulary = Mapping[str, Mapping[str, Any]]

# The contract's columns, as an empty table of text: read by name beside the records, it gives the normalisation
# every column (null where the records have none; sql/contract/cells.sql).
CONTRACT_COLUMNS = pa.table({name: pa.array([], pa.string()) for name in INPUT_KINDS})
# What normalise_rows returns: the contract's values, the workload as given, the cells that could not be read.
NORMALISED_ROW_COLUMNS: tuple[str, ...] = (*NORMALISED_COLUMNS, "workload_name", "unparsed_fields")

_SPACES = re.compile(r"\s+")


def spelling_key(value: str) -> str:
    """How a free spelling is looked up: trimmed, lower-case, runs of spaces collapsed."""
    return _SPACES.sub(" ", value.strip().lower())


def load_vocabulary(telemetry: Telemetry) -> dict[str, dict[str, Any]]:
    """The spelling tables of config/telemetry.toml (`telemetry`), keyed by `spelling_key`:

    precision / precision_prefix -> (family, recipe); workload -> workload; activation_checkpointing ->
    none | selective | full. Contract values are their own spellings. The values were checked against the
    contract's vocabularies when the file was read (tasks/contract/schema.py)."""
    cfg = telemetry
    precision = {spelling_key(k): cfg.family_and_recipe(v) for k, v in cfg.precision.items()}
    precision.update({p: (p, "none") for p in PRECISION_FAMILIES if p not in LOW_PRECISION_FAMILIES})
    prefix = {spelling_key(k): cfg.family_and_recipe(v) for k, v in cfg.precision_prefix.items()}
    workload = {spelling_key(k): str(v) for k, v in cfg.workload.items()}
    workload.update({w: w for w in WORKLOAD_TYPES})
    checkpointing = {spelling_key(k): str(v) for k, v in cfg.activation_checkpointing.items()}
    checkpointing.update({c: c for c in CHECKPOINTING_KINDS})
    return {"precision": precision, "precision_prefix": prefix, "workload": workload,
            "activation_checkpointing": checkpointing}


_SEPARATORS = re.compile(r"[\s_\-()]+")


def separator_key(key: str) -> str:
    """A spelling key with "-", "_", parentheses and spaces as one space: "fp8_rowwise", "fp8-rowwise",
    "fp8 (rowwise)" and "FP8 rowwise" are one key."""
    return _SEPARATORS.sub(" ", key).strip()


def precision_of(spelling: str, vocabulary: Vocabulary) -> tuple[str, str] | None:
    """(family, recipe) of a precision spelling: the exact key, else the longest matching prefix, else the
    configured spelling it equals but for separators (where every such spelling means the same), else None."""
    key = spelling_key(spelling)
    exact: Mapping[str, tuple[str, str]] = vocabulary["precision"]
    if key in exact:
        return exact[key]
    prefixes: Mapping[str, tuple[str, str]] = vocabulary.get("precision_prefix", {})
    for prefix in sorted(prefixes, key=len, reverse=True):
        if key.startswith(prefix):
            return prefixes[prefix]
    meanings = {value for known, value in exact.items() if separator_key(known) == separator_key(key)}
    return meanings.pop() if len(meanings) == 1 else None


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


# What the SQL normalisation (sql/contract/normalised_runs.sql) looks up, per column and distinct cell.
SPELLINGS_SCHEMA: dict[str, pl.DataType] = {
    "column_name": pl.String(), "text": pl.String(), "trimmed": pl.String(), "number": pl.Float64(),
    "whole": pl.Int64(), "moment": pl.Datetime("us", "UTC"), "word": pl.String(), "recipe": pl.String(),
    "unread": pl.String(),
}
_TARGET = {"float": "number", "int": "whole", "timestamp": "moment", "checkpointing": "word"}


def _timestamp(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace(" UTC", "+00:00"))
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _read(text: pl.Series, kind: str, vocabulary: Vocabulary) -> pl.Series:
    """Trimmed cells (`text`) of a column of `kind` ("float", "int", "timestamp", "checkpointing") as their contract
    value (null: unreadable)."""
    if kind == "checkpointing":
        table = vocabulary["activation_checkpointing"]
        return pl.Series([None if t is None else table.get(spelling_key(t)) for t in text.to_list()], dtype=pl.String)
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
        return pl.Series([_timestamp(t) for t in text.to_list()], dtype=pl.Datetime("us", "UTC"))
    raise ValueError(f"unknown column kind {kind!r}")


def look_up_spellings(found: Mapping[str, list[str] | None], vocabulary: Vocabulary) -> pl.DataFrame:
    """The cells the SQL normalisation does not read itself (sql/contract/spellings_to_look_up.sql: each column's
    distinct cells as read), SPELLINGS_SCHEMA: one row per column and cell, with the cell trimmed (`trimmed`; null when
    blank), its contract value (`number`, `whole`, `moment` or `word`, and a precision's `recipe`) and, for a cell
    that cannot be read, its text as Python's repr shows it (`unread`: unparsed_fields names it column=repr)."""
    frames = [pl.DataFrame(schema=SPELLINGS_SCHEMA)]
    for column, cells in found.items():
        if not cells:
            continue
        kind = INPUT_KINDS[column]
        text = pl.Series(column, cells, dtype=pl.String).str.strip_chars()
        text = text.set(text == "", None)
        values: dict[str, Any] = {"column_name": column, "text": cells, "trimmed": text}
        if kind == "precision":
            pairs = [None if t is None else precision_of(t, vocabulary) for t in text.to_list()]
            values["word"] = [p[0] if p else None for p in pairs]
            values["recipe"] = [p[1] if p else None for p in pairs]
        elif kind == "workload":
            table = vocabulary["workload"]
            values["word"] = [None if t is None else table.get(spelling_key(t)) for t in text.to_list()]
        else:
            parsed = _read(text, kind, vocabulary)
            values[_TARGET[kind]] = parsed
            values["unread"] = [repr(t) if t is not None and v is None else None
                                for t, v in zip(text.to_list(), parsed.to_list(), strict=True)]
        frame = pl.DataFrame(values).with_columns(
            *[pl.lit(None, dtype).alias(name) for name, dtype in SPELLINGS_SCHEMA.items() if name not in values])
        frames.append(frame.select(list(SPELLINGS_SCHEMA)).cast(SPELLINGS_SCHEMA))  # type: ignore[arg-type]
    return pl.concat(frames)


def as_arrow(frame: pl.DataFrame) -> pa.Table:
    """The frame as Arrow with string views, which DuckDB scans in place; a polars frame registered as is
    is converted with every string copied (about 0.5 s and 0.7 GB per 10^6 telemetry rows)."""
    return frame.to_arrow(compat_level=pl.CompatLevel.newest())


@contextmanager
def normalised_records(con: duckdb.DuckDBPyConnection, aliases: pl.DataFrame,
                       vocabulary: Vocabulary) -> Iterator[int]:
    """Within the block, the view `staging_normalised_runs` (sql/contract/normalised_runs.sql) is the records of
    `staging_file_records` (their contract cells as text, `_row_id`, `source_line`, `raw_values`) normalised; yields
    how many records there are. `aliases`: data/reference/gpu_aliases.csv; `vocabulary`: `load_vocabulary`."""
    execute(con, "contract/rules")
    with (
        registered(con, "telemetry_contract_columns", CONTRACT_COLUMNS),
        registered(con, "telemetry_gpu_lookup", as_arrow(canonical_gpus(aliases))),
        registered(con, "telemetry_gpu_folded", as_arrow(folded_gpus(aliases))),
    ):
        execute(con, "contract/cells")
        counted = query(con, "contract/spellings_to_look_up")
        found = dict(zip(counted.columns, counted.fetchall()[0], strict=True))
        records: int = found.pop("records")
        with registered(con, "telemetry_spellings", as_arrow(look_up_spellings(found, vocabulary))):
            execute(con, "contract/normalised_runs")
            yield records


def normalise_rows(con: duckdb.DuckDBPyConnection, rows: pl.DataFrame, aliases: pl.DataFrame,
                   vocabulary: Vocabulary) -> pl.DataFrame:
    """Rows in the contract (any of its columns, as text or typed; throughput optional) normalised on `con` by the
    ingest's own SQL, one row out per row in, in order: NORMALISED_ROW_COLUMNS. A typed cell is read as polars writes
    it (a file's text). Needs no warehouse: `con` may be a fresh in-memory `duckdb.connect()`."""
    records = rows.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_row_id"),
        (pl.int_range(pl.len(), dtype=pl.Int64) + 1).alias("source_line"),
        pl.lit(None, pl.String).alias("raw_values"),
        *[pl.col(c).cast(pl.String, strict=False) for c in rows.columns if c in INPUT_KINDS])
    with registered(con, "staging_file_records", as_arrow(records)), normalised_records(con, aliases, vocabulary):
        # the view's columns but the record hash (the stored record's identity: not computed here)
        normalised: pl.DataFrame = con.table("staging_normalised_runs").select("_row_id", *NORMALISED_ROW_COLUMNS).pl()
    return normalised.sort("_row_id").drop("_row_id")
