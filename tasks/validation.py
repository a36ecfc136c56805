"""Great Expectations, used the way that works at speed: validate an in-memory frame against a suite
stored as JSON in `expectations/`, and get back which rows failed which check.

(GX over DuckDB through SQLAlchemy fails most expectations; a pandas batch does not.)
"""

from __future__ import annotations

import json
import logging
from functools import cache
from typing import Any

import polars as pl

from tasks.settings import EXPECTATIONS_DIR

ROW_KEY = "_row_id"


@cache
def load_suite_definition(name: str) -> dict[str, Any]:
    """The suite `expectations/<name>.json` as a dict (GX's own suite JSON: name, expectations)."""
    path = EXPECTATIONS_DIR / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"expectation suite {path} is missing")
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def _batch_definition():  # noqa: ANN202 - GX types are heavy to import at module level
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
) -> pl.DataFrame:
    """Validate `frame` with the named suite. Returns one row per failing record:
    `key` and `failed_check` (all failed checks of that record, joined by '; ').

    `parameters` fills the suite's `{"$PARAMETER": name}` placeholders (thresholds from config)."""
    import great_expectations as gx

    empty = pl.DataFrame(schema={key: frame.schema[key], "failed_check": pl.String})
    if frame.height == 0:
        return empty
    definition = load_suite_definition(suite_name)
    suite = gx.ExpectationSuite(
        name=definition["name"], expectations=[dict(e) for e in definition["expectations"]]
    )
    columns = sorted({e["kwargs"]["column"] for e in definition["expectations"] if "column" in e["kwargs"]})
    batch = _batch_definition().get_batch(
        batch_parameters={"dataframe": frame.select([key, *columns]).to_pandas()}
    )
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
