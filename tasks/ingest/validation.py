"""Validation with the suites in `expectations/` (GX's own suite JSON), at the speed of the staged tables.

The suites are the contract and the source of every quarantine reason, and one engine decides: each
expectation of a suite becomes one vectorised DuckDB condition over the whole staged file (`suite_checks`),
derived mechanically from the suite's own type and kwargs with GX's semantics (nulls and NaN are "missing",
`between` and `in_set` ignore them). Great Expectations is not on the ingest's path: tests/ingest/test_validation.py
runs GX itself (`find_failures`, a pandas batch) on every staged row of the hostile-input corpus and compares its
verdicts with DuckDB's for every expectation type the suites use; a type with no derivation is refused
(SuiteError) rather than skipped.

(GX over DuckDB through SQLAlchemy fails most expectations; a pandas batch does not.)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import cache
from typing import Any

import duckdb
import polars as pl

from tasks.settings import EXPECTATIONS_DIR
from tasks.warehouse import execute

ROW_KEY = "_row_id"


@cache
def load_suite_definition(name: str) -> dict[str, Any]:
    """The suite `expectations/<name>.json` as a dict (GX's own suite JSON: name, expectations)."""
    path = EXPECTATIONS_DIR / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"expectation suite {path} is missing")
    suite: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return suite


@cache
def _batch_definition() -> Any:  # GX types are heavy to import at module level (and untyped)
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = context.data_sources.add_pandas("frames").add_dataframe_asset("frame")
    return asset.add_batch_definition_whole_dataframe("whole")


def describe_check(expectation_type: str, kwargs: dict[str, Any], meta: dict[str, Any]) -> str:
    """A quarantine reason a person understands: the expectation, its column, and why it exists."""
    column = kwargs.get("column", "")
    reason = meta.get("reason", "")
    label = f"{expectation_type}({column})" if column else expectation_type
    return f"{label}: {reason}" if reason else label


class SuiteError(RuntimeError):
    """An expectation could not be evaluated at all (e.g. its column is missing): a bug or a bad suite."""


def find_failures(
    frame: pl.DataFrame,
    suite_name: str,
    key: str = ROW_KEY,
    parameters: dict[str, Any] | None = None,
    columns: Callable[[str], bool] | None = None,
) -> pl.DataFrame:
    """Validate `frame` with the named suite (its expectations on `columns`; all when None). Returns one row
    per failing record: `key` and `failed_check` (all failed checks of that record, joined by '; ').

    `parameters` fills the suite's `{"$PARAMETER": name}` placeholders (thresholds from config)."""
    import great_expectations as gx

    empty = pl.DataFrame(schema={key: frame.schema[key], "failed_check": pl.String})
    if frame.height == 0:
        return empty
    definition = load_suite_definition(suite_name)
    expectations = suite_expectations(suite_name, columns)
    if not expectations:
        return empty
    suite = gx.ExpectationSuite(name=definition["name"], expectations=[dict(e) for e in expectations])
    checked = suite_columns(suite_name, columns)
    dataframe = frame.select([key, *checked]).to_pandas()
    batch = _batch_definition().get_batch(batch_parameters={"dataframe": dataframe})
    result = batch.validate(
        suite,
        result_format={"result_format": "COMPLETE", "unexpected_index_column_names": [key]},
        expectation_parameters=parameters or {},
    )
    keys: list[Any] = []
    checks: list[str] = []
    for outcome in result.results:
        if outcome.success:
            continue
        config = outcome.expectation_config
        if outcome.exception_info and outcome.exception_info.get("raised_exception"):
            raise SuiteError(
                f"suite {suite_name}: {config.type} on {config.kwargs.get('column')!r} could not run: "
                f"{outcome.exception_info.get('exception_message')}"
            )
        label = describe_check(config.type, config.kwargs, config.meta or {})
        unexpected = outcome.result.get("unexpected_index_list")
        if unexpected is None:
            # A table-level expectation (no per-row answer): every row fails it.
            unexpected = [{key: value} for value in frame[key].to_list()]
        for entry in unexpected:
            keys.append(entry[key])
            checks.append(label)
    if not keys:
        return empty
    failures = pl.DataFrame({key: keys, "failed_check": checks}, schema=empty.schema)
    return failures.group_by(key, maintain_order=True).agg(pl.col("failed_check").str.join("; "))


SUPPORTED = (
    "expect_column_values_to_not_be_null",
    "expect_column_values_to_be_null",
    "expect_column_values_to_be_between",
    "expect_column_values_to_be_in_set",
)


def _parameter(value: Any, parameters: dict[str, Any]) -> Any:
    if isinstance(value, dict) and "$PARAMETER" in value:
        return parameters[value["$PARAMETER"]]
    return value


def suite_checks(
    suite_name: str,
    types: dict[str, str],
    parameters: dict[str, Any] | None = None,
    columns: Callable[[str], bool] | None = None,
) -> list[tuple[int, str, duckdb.Expression]]:
    """(place in the suite, quarantine reason, condition true on a failing row) per expectation on `columns`
    (every expectation when None), in the suite's order.

    `types` are the staged columns' DuckDB types. GX (pandas) semantics: null and NaN are missing values;
    `not_be_null` fails them, `be_null` accepts them, `between` and `in_set` skip them."""
    parameters = parameters or {}
    checks: list[tuple[int, str, duckdb.Expression]] = []
    for order, expectation in enumerate(load_suite_definition(suite_name)["expectations"]):
        kind, kwargs = expectation["type"], expectation["kwargs"]
        if columns is not None and not columns(kwargs.get("column", "")):
            continue
        if kind not in SUPPORTED:
            raise SuiteError(f"suite {suite_name}: {kind} has no SQL evaluation (supported: {', '.join(SUPPORTED)})")
        column = kwargs["column"]
        if column not in types:
            raise SuiteError(f"suite {suite_name}: {kind} on {column!r} could not run: no such staged column")
        value = duckdb.ColumnExpression(column)
        missing = value.isnull()
        if types[column] in ("DOUBLE", "FLOAT"):
            missing = missing | duckdb.FunctionExpression("isnan", value)
        if kind == "expect_column_values_to_not_be_null":
            failing = missing
        elif kind == "expect_column_values_to_be_null":
            failing = ~missing
        elif kind == "expect_column_values_to_be_in_set":
            allowed = [duckdb.ConstantExpression(v) for v in kwargs["value_set"]]
            failing = ~missing & ~value.isin(*allowed)
        else:
            outside = duckdb.ConstantExpression(False)
            low, high = _parameter(kwargs.get("min_value"), parameters), _parameter(kwargs.get("max_value"), parameters)
            if low is not None:
                bound = duckdb.ConstantExpression(float(low))
                outside = outside | ((value <= bound) if kwargs.get("strict_min") else (value < bound))
            if high is not None:
                bound = duckdb.ConstantExpression(float(high))
                outside = outside | ((value >= bound) if kwargs.get("strict_max") else (value > bound))
            failing = ~missing & outside
        checks.append((order, describe_check(kind, kwargs, expectation.get("meta") or {}), failing))
    return checks


def suite_expectations(suite_name: str, columns: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
    """The suite's expectations on `columns` (all when None), in the suite's order."""
    expectations = load_suite_definition(suite_name)["expectations"]
    return [e for e in expectations if columns is None or columns(e["kwargs"].get("column", ""))]


def suite_columns(suite_name: str, columns: Callable[[str], bool] | None = None) -> list[str]:
    return sorted({e["kwargs"]["column"] for e in suite_expectations(suite_name, columns) if "column" in e["kwargs"]})


def check_staged(
    con: duckdb.DuckDBPyConnection,
    suite_name: str,
    parameters: dict[str, Any] | None = None,
    columns: Callable[[str], bool] | None = None,
) -> None:
    """Add the failing rows of the suite's expectations on `columns` (all when None) over `staging_file_rows`
    to `staging_suite_check_rows` (_row_id, check_order, failed_check).

    A file can be checked in parts (a worker checks what the file alone decides, the writer what depends on
    the warehouse's current rows); `check_order` is the expectation's place in the whole suite, so the parts
    together give the same `staging_suite_failures` as one pass."""
    execute(con, "ingest/create_check_rows")
    staged = con.table("staging_file_rows")
    types = {name: str(kind) for name, kind in zip(staged.columns, staged.types, strict=True)}
    checks = suite_checks(suite_name, types, parameters, columns)
    if not checks:
        return
    failing: duckdb.DuckDBPyRelation | None = None
    for order, label, condition in checks:
        rows = staged.filter(condition).select(
            duckdb.ColumnExpression(ROW_KEY),
            duckdb.ConstantExpression(order).alias("check_order"),
            duckdb.ConstantExpression(label).alias("failed_check"),
        )
        failing = rows if failing is None else failing.union(rows)
    assert failing is not None
    failing.create_view("part_check_rows_found", replace=True)
    execute(con, "ingest/stage_part_check_rows")
    execute(con, "ingest/append_check_rows")


def collect_suite_failures(con: duckdb.DuckDBPyConnection) -> None:
    """`staging_suite_check_rows` (every part checked) -> `staging_suite_failures`, one row per failing row."""
    execute(con, "ingest/create_check_rows")
    execute(con, "ingest/suite_failures")
