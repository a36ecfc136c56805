"""Every price adapter fed damaged and hostile files: each file ends loaded (only sane rows in core, the rest
quarantined with a reason) or quarantined whole with its error, never an exception, never half a file.
Names and values holding SQL are stored as data."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings

from tasks.ingest.registry import FileOutcome
from tasks.prices.ingest import IDENTICAL_DUPLICATE, PriceSource, ingest_price_file
from tests import configured
from tests.reliability.helpers import whole_file_violations
from tests.reliability.hostile import (
    NAMED_PRICES,
    SEEDS,
    SQL_TEXT,
    Seed,
    damaged,
    duplicate_header,
    set_prices_csv,
    set_prices_json,
    wide_row,
)

AT = datetime(2026, 1, 5, tzinfo=UTC)
NAMES = itertools.count()
IDS = [f"{s.format}:{Path(s.sample).suffix[1:]}:{s.provider}" for s in SEEDS]

# Rows that reached core: priced, positive, finite and within the configured bounds
# (config/settings.toml [validation.prices]: 1000 USD per instance-hour, 150 USD per GPU-hour; an owned site's
# electricity 0 to 2 USD per kWh and PUE 1 to 3, where given), known GPU, USD.
INSANE_CORE_ROWS = """
select count(*) from core.price_observations
where content_sha256 = $sha and not (
    isfinite(usd_per_hour) and usd_per_hour > 0 and usd_per_hour <= 1000
    and isfinite(usd_per_gpu_hour) and usd_per_gpu_hour > 0 and usd_per_gpu_hour <= 150
    and gpu is not null and currency = 'USD' and gpu_count > 0
    and coalesce(isfinite(electricity_usd_per_kwh) and electricity_usd_per_kwh between 0 and 2, true)
    and coalesce(isfinite(pue) and pue between 1 and 3, true))
"""


def ingest_bytes(con: duckdb.DuckDBPyConnection, seed: Seed, data: bytes, folder: Path) -> tuple[FileOutcome, Path]:
    # every file name carries SQL: it must be stored as data like any other name
    path = folder / f"{next(NAMES)}{SQL_TEXT}{seed.suffix}"
    path.write_bytes(data)
    outcome = ingest_price_file(con, PriceSource(path, seed.provider, seed.format, seed.options),
                                configured.aliases(), AT, **configured.price_options())
    return outcome, path


def check(con: duckdb.DuckDBPyConnection, outcome: FileOutcome, path: Path) -> None:
    assert outcome.status in ("loaded", "quarantined", "already_ingested"), outcome
    assert whole_file_violations(con) == []
    sha = outcome.content_sha256
    if outcome.status == "quarantined":
        errors = con.execute("select error from quarantine.rejected_files where source_file = ?",
                             [str(path)]).fetchall()
        assert errors and all(e for (e,) in errors), outcome
        assert con.execute("select count(*) from core.price_observations where content_sha256 = ?", [sha]).fetchall() \
            == [(0,)]
    if outcome.status == "loaded":
        assert con.execute("select source_file from raw.ingested_files where content_sha256 = ?", [sha]).fetchall() \
            == [(str(path),)]
        assert con.execute(INSANE_CORE_ROWS, {"sha": sha}).fetchall() == [(0,)]
        # every record read is loaded, quarantined, or an identical duplicate of an earlier row, counted as skipped
        duplicates = outcome.skipped_by_reason.get(IDENTICAL_DUPLICATE, 0)
        assert outcome.rows_loaded + outcome.rows_quarantined + duplicates == outcome.rows_read
    # the SQL in names and values never ran: the tables it names are still there
    con.execute("select count(*) from core.price_observations").fetchall()
    con.execute("select count(*) from raw.ingested_files").fetchall()


@pytest.mark.parametrize("seed", SEEDS, ids=IDS)
def test_damaged_files_are_loaded_sanely_or_quarantined_whole(seed: Seed, con, tmp_path: Path) -> None:
    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=damaged(seed))
    def run(data: bytes) -> None:
        outcome, path = ingest_bytes(con, seed, data, tmp_path)
        check(con, outcome, path)

    run()


@pytest.mark.parametrize("seed", SEEDS, ids=IDS)
def test_named_hostile_cases(seed: Seed, con, tmp_path: Path) -> None:
    text = seed.text()
    cases: dict[str, bytes] = {"empty": b"", "whitespace only": b" \n\n"}
    if seed.kind != "json":
        cases["duplicate header"] = duplicate_header(text, seed).encode()
        cases["10^5-column row"] = wide_row(text, seed).encode()
    for value in NAMED_PRICES:
        mutated = set_prices_json(text, seed, _json_value(value)) if seed.kind == "json" \
            else set_prices_csv(text, seed, value)
        cases[f"every price = {value[:20]}"] = mutated.encode()
    outcomes = {}
    for name, data in cases.items():
        outcome, path = ingest_bytes(con, seed, data, tmp_path)
        check(con, outcome, path)
        outcomes[name] = outcome
    assert outcomes["empty"].status == "quarantined" and "empty" in (outcomes["empty"].error or "")
    plain, _ = ingest_bytes(con, seed, text.encode(), tmp_path)
    check(con, plain, _)
    # the undamaged slice loads priced rows, so that "no hostile price loads" below is not vacuous
    assert (plain.rows_loaded > 0) == seed.loads_rows, plain
    for name, outcome in outcomes.items():
        if name.startswith("every price") and outcome.status == "loaded":
            assert outcome.rows_loaded == 0, name  # a negative, zero, NaN, infinite, huge or SQL price never loads


def _json_value(text: str) -> object:
    try:
        return float(text)
    except ValueError:
        return text


def test_sql_in_names_and_values_is_stored_as_data(con, tmp_path: Path) -> None:
    """A SkyPilot row whose instance type and region are SQL: loaded verbatim, nothing executed."""
    seed = SEEDS[0]
    header, first = seed.text().splitlines()[:2]
    row = first.split(",", 1)[1]  # everything after the instance type
    hostile = f'"{SQL_TEXT}",{row}'
    outcome, path = ingest_bytes(con, seed, f"{header}\n{hostile}\n".encode(), tmp_path)
    assert outcome.status == "loaded" and outcome.rows_loaded == 1, outcome
    stored = con.execute("select instance_type, source_file from core.price_observations").fetchall()
    assert stored == [(SQL_TEXT, str(path))]
    assert math.isfinite(con.execute("select usd_per_hour from core.price_observations").fetchall()[0][0])


def test_two_rows_whose_dates_cannot_be_read_are_quarantined_not_dated_at_ingest(con, tmp_path: Path) -> None:
    """The example hypothesis found: two rows of a dated list whose dates cannot be read (1e308, 1e999). They
    were once observed at the ingest time (and, equal otherwise, kept as one observation): an old price became
    tonight's. Each is now quarantined with its own reason; the dated row is loaded."""
    seed = next(s for s in SEEDS if s.sample.startswith("aws_p5.48xlarge"))
    data = (b"timestamp,instance,price_usd\n2025-04-23T18:52:57,p5.48xlarge,98.32\n"
            b"1e308,p5.48xlarge,98.32\n1e999,p5.48xlarge,98.32\n")
    outcome, path = ingest_bytes(con, seed, data, tmp_path)
    check(con, outcome, path)
    # 3 records: line 2 (dated) loaded; lines 3 and 4 (no readable date) quarantined; nothing skipped
    assert (outcome.rows_read, outcome.rows_loaded, outcome.rows_quarantined) == (3, 1, 2)
    assert outcome.skipped_by_reason.get(IDENTICAL_DUPLICATE, 0) == 0
    reasons = con.execute("select source_line, failed_check from quarantine.rejected_rows where source_file = ? "
                          "order by source_line", [str(path)]).fetchall()
    assert [line for line, _ in reasons] == [3, 4]
    assert all("is not a date" in reason and "has no date" in reason for _, reason in reasons), reasons
    observed = con.execute("select observed_at from core.price_observations where source_file = ?",
                           [str(path)]).fetchall()
    assert observed == [(datetime(2025, 4, 23, 18, 52, 57, tzinfo=UTC),)]
