"""The suites evaluated in DuckDB give the same verdicts as Great Expectations itself, for every expectation type
the suites use.

DuckDB alone decides during an ingest (tasks/ingest/validation.py derives one condition per expectation from the
suite files). Here every staged row of each file of the hostile-input corpus (tests/reliability/hostile.py: every
price format with hostile prices, telemetry with hostile values in every numeric column) is also validated by GX
(`validation.find_failures`, a pandas batch of the same rows, the same suite file and parameters), and the failing
(row, check) pairs must be equal, file by file.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tasks.ingest import lifecycle, validation
from tasks.prices.ingest import PriceSource, ingest_price_file
from tasks.settings import EXPECTATIONS_DIR
from tasks.telemetry.ingest import ingest_telemetry_file
from tests import configured
from tests.conftest import PRICE_SAMPLES
from tests.reliability.hostile import NAMED_PRICES, SEEDS, SQL_TEXT, set_prices_csv, set_prices_json

AT = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
TELEMETRY_SAMPLE = PRICE_SAMPLES.parent / "telemetry" / "published_benchmarks.csv"
HOSTILE_NUMBERS = ["-5", "0", "NaN", "inf", "-inf", "1e308", "1e999", "", "x", SQL_TEXT]
KEY = validation.ROW_KEY


def _pairs(failures: pl.DataFrame) -> set[tuple[int, str]]:
    """(row, check) pairs of a failures frame (checks joined by '; ' split apart: GX orders them its own way)."""
    exploded = failures.select(KEY, pl.col("failed_check").str.split("; ")).explode("failed_check")
    return set(zip(exploded[KEY].to_list(), exploded["failed_check"].to_list(), strict=True))


def _types(suite: str) -> dict[str, str]:
    """quarantine reason -> expectation type, for the suite's expectations."""
    return {validation.describe_check(e["type"], e["kwargs"], e.get("meta") or {}): e["type"]
            for e in json.loads((EXPECTATIONS_DIR / f"{suite}.json").read_text())["expectations"]}


class Verdicts:
    """Per file: rows GX saw; per expectation type: failing rows both engines found."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.failing_by_type: Counter[str] = Counter()


@pytest.fixture
def gx_beside_duckdb(monkeypatch: pytest.MonkeyPatch) -> Verdicts:
    """After DuckDB checks a staged file, GX validates every staged row with the same suite; the pairs must match."""
    seen = Verdicts()
    real = lifecycle.check_staged

    def both(con: duckdb.DuckDBPyConnection, suite: str, parameters=None, columns=None) -> None:
        real(con, suite, parameters, columns)
        staged = con.table("staging_file_rows")
        frame = staged.select(*[duckdb.ColumnExpression(c) for c in (KEY, *validation.suite_columns(suite))]).pl()
        by_gx = validation.find_failures(frame, suite, KEY, parameters)
        by_duckdb = con.table("staging_suite_check_rows").select(
            duckdb.ColumnExpression(KEY), duckdb.ColumnExpression("failed_check")).pl()
        assert _pairs(by_gx) == _pairs(by_duckdb), sorted(_pairs(by_gx) ^ _pairs(by_duckdb))[:3]
        seen.rows.append(frame.height)
        types = _types(suite)
        seen.failing_by_type.update(types[check] for _, check in _pairs(by_duckdb))

    monkeypatch.setattr(lifecycle, "check_staged", both)
    return seen


@pytest.mark.parametrize("seed", SEEDS, ids=[f"{s.format}:{s.sample}" for s in SEEDS])
def test_duckdb_and_gx_fail_the_same_price_rows(seed, con, tmp_path: Path, gx_beside_duckdb: Verdicts) -> None:
    aliases = configured.aliases()
    for index, value in enumerate(NAMED_PRICES):
        text = seed.text()
        text = set_prices_json(text, seed, value) if seed.kind == "json" else set_prices_csv(text, seed, value)
        path = tmp_path / f"hostile-{index}{seed.suffix}"
        path.write_text(text, encoding="utf-8")
        outcome = ingest_price_file(con, PriceSource(path, seed.provider, seed.format, seed.options), aliases, AT,
                                    **configured.price_options())
        assert outcome.status in ("loaded", "quarantined"), outcome
    if seed.loads_rows:
        # GX saw whole files (every staged row), and the hostile prices made rows fail
        assert sum(gx_beside_duckdb.rows) > 0
        assert sum(gx_beside_duckdb.failing_by_type.values()) > 0


def test_duckdb_and_gx_fail_the_same_telemetry_rows(con, tmp_path: Path, gx_beside_duckdb: Verdicts) -> None:
    sample = pl.read_csv(TELEMETRY_SAMPLE, infer_schema=False).head(20)
    numeric = ["num_gpus", "params_b", "active_params_b", "seq_len", "micro_batch", "global_batch_tokens",
               "tokens_per_sec_per_gpu", "mfu"]
    rows = [sample]
    for value in HOSTILE_NUMBERS:  # one copy of the sample per hostile value, in one column each
        for i, column in enumerate(numeric):
            rows.append(sample.slice(i, 1).with_columns(pl.lit(value).alias(column),
                                                        run_id=pl.lit(f"hostile-{column}-{value}")))
    hostile = pl.concat(rows)
    for suffix in ("csv", "parquet"):
        path = tmp_path / f"hostile.{suffix}"
        hostile.write_csv(path) if suffix == "csv" else hostile.write_parquet(path)
        outcome = ingest_telemetry_file(con, path, configured.aliases(), AT, **configured.telemetry_options())
        assert outcome.status == "loaded", outcome
        # worked out from the file: every hostile cell fails a check except a positive finite number in a
        # column whose only rule is "positive" (1e308 in tokens_per_sec_per_gpu still breaks the peak check)
        assert outcome.rows_quarantined >= len(HOSTILE_NUMBERS) * len(numeric) // 2
    assert gx_beside_duckdb.rows == [hostile.height, hostile.height]
    # every expectation type of the telemetry suite failed rows, with the same verdict in both engines
    assert set(gx_beside_duckdb.failing_by_type) == {e["type"] for e in json.loads(
        (EXPECTATIONS_DIR / "telemetry.json").read_text())["expectations"]}


def test_every_expectation_type_of_the_prices_suite_gets_the_same_verdict(con, tmp_path: Path,
                                                                          gx_beside_duckdb: Verdicts) -> None:
    lambda_seed = next(s for s in SEEDS if s.sample == "skypilot_v8_lambda_gpu.csv")
    # a negative price fails `between`; NaN is missing: `not_be_null` fails
    for index, value in enumerate(("-5", "NaN")):
        path = tmp_path / f"lambda-{index}.csv"
        path.write_text(set_prices_csv(lambda_seed.text(), lambda_seed, value), encoding="utf-8")
        ingest_price_file(con, PriceSource(path, "lambda", "skypilot"), configured.aliases(), AT,
                          **configured.price_options())
    # prices in euros: currency fails `in_set` (core holds USD only)
    azure = (PRICE_SAMPLES / "azure_retail_prices_gpu_westus.json").read_text(encoding="utf-8")
    euros = tmp_path / "azure-eur.json"
    euros.write_text(azure.replace('"currencyCode": "USD"', '"currencyCode": "EUR"'), encoding="utf-8")
    ingest_price_file(con, PriceSource(euros, "azure", "azure-retail"), configured.aliases(), AT,
                      **configured.price_options())
    assert set(gx_beside_duckdb.failing_by_type) == {e["type"] for e in json.loads(
        (EXPECTATIONS_DIR / "prices.json").read_text())["expectations"]}
