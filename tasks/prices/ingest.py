"""Price lists through the one ingest lifecycle (tasks/ingest/lifecycle.py): the `prices` Dataset is the
adapter that reads a format, the normalisation SQL (sql/prices/normalise.sql), the price move against
history and the plausibility (sql/prices/price_move_factor.sql, plausibility.sql), the `prices` suite and the
store SQL.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from tasks.ingest.config import IngestLimits
from tasks.ingest.lifecycle import Dataset, FileContext, FileError, Staged, ingest_file
from tasks.ingest.lifecycle import quarantine_unreadable as _quarantine_unreadable
from tasks.ingest.registry import FileOutcome
from tasks.ingest.source import FileSource
from tasks.ingest.validation import ROW_KEY
from tasks.prices.adapter import AdapterContext, AdapterError, conform, reference_table
from tasks.prices.config import PriceValidation
from tasks.providers import registry
from tasks.warehouse import execute, query, registered

OVERRIDES_FILE = "gpu_instance_overrides.csv"

# A price file to read is a FileSource with its provider and format (adapter) set.
PriceSource = FileSource
IDENTICAL_DUPLICATE = "identical duplicate of an earlier row of this file (one observation kept)"


def read_overrides(reference_dir: Path) -> pl.DataFrame:
    """provider, instance_type_pattern (regex, whole name), gpu, gpu_count, in file order (first match wins)."""
    table = reference_table(OVERRIDES_FILE, reference_dir)
    return table.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("override_order"),
        "provider", "instance_type_pattern", "gpu", "gpu_count",
    )


DATASET = "prices"
# the price move and the plausibility (sql/prices/plausibility.sql) are measured against the observations stored
# so far: the writer's part, in the file's transaction
HISTORY = ("prices/price_move_factor", "prices/plausibility", "prices/checked_rows")
HISTORY_COLUMNS = frozenset({"previous_usd_per_hour", "price_move_factor", "gpu_price_factor", "vs_class_floor",
                             "vs_class_ceiling", "share_of_gpu_median"})


def price_dataset(
    aliases: pl.DataFrame, validation: PriceValidation, reference_dir: Path, overrides: pl.DataFrame | None = None,
) -> Dataset:
    """The `prices` dataset: `validation` is config/settings.toml [validation.prices], `reference_dir` the
    adapters' lookup tables (config/settings.toml [reference] folder; a worker staging the file reads no
    configuration)."""
    prices = PriceLists(aliases, validation, reference_dir, overrides)
    return Dataset(
        name=DATASET, suite="prices",
        parameters={k: v for k, v in validation.model_dump().items() if k.startswith(("max_", "min_"))},
        stage=prices.read_and_stage, failures="prices/combine_failures", store=prices.store,
        notes=prices.rejection_notes, read_error="cannot read as {format}: {name}: {error}",
        history=HISTORY, history_columns=HISTORY_COLUMNS,
        history_tables={"price_gpu_classes": gpu_class_bounds(validation).to_arrow(),
                        **gpu_median_settings(validation)},
    )


class PriceLists:
    """What reading, normalising and storing a price list needs: the GPU aliases, the instance overrides, the
    thresholds and the adapters' lookup tables."""

    def __init__(
        self, aliases: pl.DataFrame, validation: PriceValidation, reference_dir: Path,
        overrides: pl.DataFrame | None = None,
    ) -> None:
        self.aliases = aliases.select("alias", "gpu")
        self.validation = validation
        self.reference_dir = reference_dir
        self.overrides = read_overrides(self.reference_dir) if overrides is None else overrides

    def read_and_stage(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> Staged:
        source, path = file.source, Path(file.source.path)
        if path.stat().st_size == 0:
            raise FileError(f"cannot read as {source.format}: {path.name}: the file is empty")
        context = AdapterContext(
            provider=str(source.provider), ingest_time=file.ingested_at, options=source.options or {},
            validation=self.validation,
            reference_dir=self.reference_dir,
        )
        try:
            result = registry.reader(str(source.format))(con, path, context)
            if result.records is not None:  # read in Python: the records are staged here
                records = conform(result.records).with_row_index(ROW_KEY)
                with registered(con, "adapter_records", records.to_arrow()):
                    execute(con, "prices/stage_adapter_records")
        except AdapterError as error:  # the adapter names the file's problem
            raise FileError(f"cannot read as {source.format}: {error}") from error
        execute(con, "prices/file_records_view")
        stage_records(con, self.aliases, self.overrides, file)
        # one normalised row per record (the aliases are unique: tasks/reference.py::read_aliases): counting the
        # staged table does not compute the records a second time (a view for DuckDB's readers)
        rows_read: int = query(con, "prices/count_staged_rows").fetchall()[0][0]
        skipped = dict(result.skipped_by_reason)
        duplicates = collapse_duplicates(con)
        if duplicates:
            skipped[IDENTICAL_DUPLICATE] = duplicates
        return Staged(rows_read=rows_read, skipped_by_reason=skipped, notes=list(result.notes))

    def rejection_notes(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        unknown = [name for (name,) in query(con, "prices/unknown_gpu_names").fetchall()]
        return [f"unknown GPU names: {', '.join(unknown)}"] if unknown else []

    def store(self, con: duckdb.DuckDBPyConnection, file: FileContext) -> list[str]:
        execute(con, "prices/insert_observations", _identity_params(file))
        execute(con, "prices/insert_storage_prices", _identity_params(file))
        return []


def collapse_duplicates(con: duckdb.DuckDBPyConnection) -> int:
    """Drop the staged rows identical to an earlier row of the file (sql/prices/collapse_duplicates.sql); returns
    how many were dropped."""
    if not query(con, "prices/may_hold_identical_rows").fetchall()[0][0]:
        return 0
    before: int = query(con, "prices/count_staged_rows").fetchall()[0][0]
    execute(con, "prices/collapse_duplicates")
    after: int = query(con, "prices/count_staged_rows").fetchall()[0][0]
    return before - after


def gpu_class_bounds(validation: PriceValidation) -> pl.DataFrame:
    """gpu, class_name, min_usd_per_gpu_hour, max_usd_per_gpu_hour: one row per GPU named in a class."""
    rows = [(gpu, c.name, c.min_usd_per_gpu_hour, c.max_usd_per_gpu_hour)
            for c in validation.gpu_classes for gpu in c.gpus]
    return pl.DataFrame(rows, orient="row", schema={
        "gpu": pl.String, "class_name": pl.String, "min_usd_per_gpu_hour": pl.Float64,
        "max_usd_per_gpu_hour": pl.Float64})


def gpu_median_settings(validation: PriceValidation) -> dict[str, pa.Table]:
    """The per-GPU-or-per-instance check's settings as the tables sql/prices/plausibility.sql reads:
    `price_gpu_median_settings` (one row) and `price_gpu_median_exempt` (provider)."""
    settings = pl.DataFrame({"min_share_of_gpu_median": [validation.min_share_of_gpu_median],
                             "gpu_median_min_providers": [validation.gpu_median_min_providers],
                             "gpu_median_window_days": [validation.gpu_median_window_days]},
                            schema={"min_share_of_gpu_median": pl.Float64, "gpu_median_min_providers": pl.Int64,
                                    "gpu_median_window_days": pl.Int32})
    exempt = pl.DataFrame({"provider": validation.gpu_median_exempt_providers}, schema={"provider": pl.String})
    return {"price_gpu_median_settings": settings.to_arrow(), "price_gpu_median_exempt": exempt.to_arrow()}


def _normalise_params(file: FileContext) -> dict[str, Any]:
    return {"ingested_at": file.ingested_at}


def _identity_params(file: FileContext) -> dict[str, Any]:
    """The file's identity, the same on every stored row (added where rows are stored, not staged)."""
    return {"source_file": file.source_file, "sha": file.sha256, "ingested_at": file.ingested_at}


def stage_records(
    con: duckdb.DuckDBPyConnection, aliases: pl.DataFrame, overrides: pl.DataFrame, file: FileContext
) -> None:
    """Adapter records (`file_records`) -> staging_file_rows, normalised (SQL); the file alone decides them
    (the price move against stored history is added by the writer: `HISTORY`)."""
    with (
        registered(con, "price_aliases", aliases.to_arrow()),
        registered(con, "instance_overrides", overrides.to_arrow()),
    ):
        execute(con, "prices/normalise", _normalise_params(file))


def normalise(
    records: pl.DataFrame,
    aliases: pl.DataFrame,
    source_file: str,
    sha256: str,
    ingested_at: datetime,
    overrides: pl.DataFrame,
) -> pl.DataFrame:
    """Adapter records -> normalised rows (sql/prices/normalise.sql in a private in-memory DuckDB), one per
    record in the records' order: the same SQL the ingest runs, for callers without a warehouse (`overrides`:
    read_overrides of the reference folder)."""
    file = FileContext(FileSource(Path(source_file)), sha256, ingested_at)
    with duckdb.connect() as con:
        con.execute("set timezone = 'UTC'")
        con.execute("create schema marts")  # the cost model's macros price commitments over their term
        execute(con, "ddl/070_marts_cost_model")
        records = conform(records).with_row_index(ROW_KEY)
        with (
            registered(con, "file_records", records.to_arrow()),
            registered(con, "price_aliases", aliases.select("alias", "gpu").to_arrow()),
            registered(con, "instance_overrides", overrides.to_arrow()),
        ):
            execute(con, "prices/normalise", _normalise_params(file))
            rows: pl.DataFrame = con.table("staging_file_rows").order(ROW_KEY).pl()
        return rows.with_columns(source_file=pl.lit(source_file), content_sha256=pl.lit(sha256),
                                 ingested_at=pl.lit(ingested_at).cast(pl.Datetime("us", "UTC")))


def ingest_price_file(
    con: duckdb.DuckDBPyConnection,
    source: FileSource,
    aliases: pl.DataFrame,
    ingested_at: datetime,
    *,
    validation: PriceValidation,
    reference_dir: Path,
    limits: IngestLimits,
) -> FileOutcome:
    """One price file through the lifecycle (the public entry point for one file)."""
    return ingest_file(con, price_dataset(aliases, validation, reference_dir), source, ingested_at, limits)


def quarantine_unreadable(
    con: duckdb.DuckDBPyConnection, source: FileSource, error: BaseException, ingested_at: datetime
) -> FileOutcome:
    """A price file still unreadable after the task's retries (see tasks.ingest.lifecycle)."""
    return _quarantine_unreadable(con, DATASET, source, error, ingested_at)
