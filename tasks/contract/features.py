"""Feature rows for the token-efficiency models (contract 1), from ONE SQL file over normalised runs.

`build_features(con, runs)` works for stored runs and for prediction inputs without throughput;
`features.training_runs` is the same SQL over `core.telemetry_runs`, refreshed after every ingest.
"""

from __future__ import annotations

import duckdb
import polars as pl

from tasks.contract.schema import FEATURE_COLUMNS, NORMALISED_SCHEMA
from tasks.reference import ReferenceFiles
from tasks.sql_files import execute, query, registered

FEATURE_ROW = "_feature_row"


def _conform(runs: pl.DataFrame) -> pl.DataFrame:
    """Every normalised column with its contract type (null where the frame has none), plus input order."""
    columns = [
        (pl.col(name).cast(dtype) if name in runs.columns else pl.lit(None, dtype)).alias(name)
        for name, dtype in NORMALISED_SCHEMA.items()
    ]
    return runs.select(columns).with_row_index(FEATURE_ROW)


def build_features(
    con: duckdb.DuckDBPyConnection, runs: pl.DataFrame, model_shapes: str, matmul_ceilings: str
) -> pl.DataFrame:
    """One feature row per run, in input order, with exactly FEATURE_COLUMNS.

    `runs` are normalised runs (tasks.contract.normalise); throughput is optional.
    Needs core.gpu_specs (tasks.reference.load_reference_tables). The two reference files are the configured
    ones (config/settings.toml [reference]), or the copies a registered model carries."""
    with registered(con, "feature_input", _conform(runs)):
        features: pl.DataFrame = query(con, "features/build_features",
                         {"model_shapes": model_shapes, "matmul_ceilings": matmul_ceilings}).pl()
    return features.select(FEATURE_COLUMNS)


def refresh_feature_table(con: duckdb.DuckDBPyConnection, reference: ReferenceFiles) -> int:
    """(Re)build features.training_runs from core.telemetry_runs; returns its row count."""
    runs = query(con, "features/telemetry_runs").pl()
    features = build_features(con, runs, str(reference.path("model_shapes")), str(reference.path("matmul_ceilings")))
    with registered(con, "training_run_features", features):
        execute(con, "features/replace_training_runs")
    return features.height
