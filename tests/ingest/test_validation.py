"""The suites evaluated in DuckDB give the same failing rows and checks as Great Expectations itself.

Every staged row of each file of the hostile-input corpus (tests/reliability/hostile.py: every price format
with hostile prices, telemetry with hostile values in every numeric column) is re-validated by GX: the
ingest's own cross-check (tasks.ingest.validation.crosscheck_with_gx) compares GX's failing (row, check)
pairs with DuckDB's and raises SuiteError on any difference. Here its sample is widened to every row.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from tasks.ingest import validation
from tasks.prices.ingest import PriceSource, ingest_price_file
from tasks.reference import read_aliases
from tasks.telemetry.ingest import ingest_telemetry_file
from tests.conftest import PRICE_SAMPLES
from tests.reliability.hostile import NAMED_PRICES, SEEDS, SQL_TEXT, set_prices_csv, set_prices_json

AT = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
TELEMETRY_SAMPLE = PRICE_SAMPLES.parent / "telemetry" / "published_benchmarks.csv"
HOSTILE_NUMBERS = ["-5", "0", "NaN", "inf", "-inf", "1e308", "1e999", "", "x", SQL_TEXT]


@pytest.fixture
def every_row_to_gx(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """GX re-validates every staged row; returns (rows GX saw, rows failing) per file, to show it ran."""
    seen: list[tuple[int, int]] = []
    real = validation.find_failures
    monkeypatch.setattr(validation, "CROSSCHECK_ROWS", 10**9)

    def counting(frame: pl.DataFrame, *args: object, **kwargs: object) -> pl.DataFrame:
        failures = real(frame, *args, **kwargs)
        seen.append((frame.height, failures.height))
        return failures

    monkeypatch.setattr(validation, "find_failures", counting)
    return seen


@pytest.mark.parametrize("seed", SEEDS, ids=[f"{s.format}:{s.sample}" for s in SEEDS])
def test_duckdb_and_gx_fail_the_same_price_rows(seed, con, tmp_path: Path, every_row_to_gx) -> None:
    aliases = read_aliases()
    for index, value in enumerate(NAMED_PRICES):
        text = seed.text()
        text = set_prices_json(text, seed, value) if seed.kind == "json" else set_prices_csv(text, seed, value)
        path = tmp_path / f"hostile-{index}{seed.suffix}"
        path.write_text(text, encoding="utf-8")
        outcome = ingest_price_file(con, PriceSource(path, seed.provider, seed.format, seed.options), aliases, AT)
        assert outcome.status in ("loaded", "quarantined"), outcome  # a disagreement would raise SuiteError
    if seed.loads_rows:
        # GX saw whole files (every staged row), and the hostile prices made rows fail
        assert sum(rows for rows, _ in every_row_to_gx) > 0
        assert sum(failing for _, failing in every_row_to_gx) > 0


def test_duckdb_and_gx_fail_the_same_telemetry_rows(con, tmp_path: Path, every_row_to_gx) -> None:
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
        outcome = ingest_telemetry_file(con, path, read_aliases(), AT)
        assert outcome.status == "loaded", outcome
        # worked out from the file: every hostile cell fails a check except a positive finite number in a
        # column whose only rule is "positive" (1e308 in tokens_per_sec_per_gpu still breaks the peak check)
        assert outcome.rows_quarantined >= len(HOSTILE_NUMBERS) * len(numeric) // 2
    assert [rows for rows, _ in every_row_to_gx] == [hostile.height, hostile.height]
