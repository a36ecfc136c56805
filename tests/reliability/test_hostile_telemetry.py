"""The telemetry readers (CSV, JSON Lines, Parquet) fed damaged and hostile files: each file ends loaded (only
valid runs in core, the rest quarantined with a reason) or quarantined whole, never an exception, never
half a file."""

from __future__ import annotations

import io
import itertools
import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.ingest.landing import landed_lines
from tasks.ingest.registry import FileOutcome
from tasks.telemetry.ingest import ingest_telemetry_file
from tests import configured
from tests.conftest import TELEMETRY_SAMPLES
from tests.reliability.helpers import whole_file_violations
from tests.reliability.hostile import HOSTILE_JSON, HOSTILE_TEXT, SQL_TEXT

AT = datetime(2026, 1, 5, tzinfo=UTC)
NAMES = itertools.count()
SAMPLE = pl.read_csv(TELEMETRY_SAMPLES / "published_benchmarks.csv", infer_schema=False).head(12)
NUMBERS = ("tokens_per_sec_per_gpu", "num_gpus", "params_b", "seq_len")

# Runs that reached core are physical: positive throughput and sizes, a known GPU and precision.
INVALID_CORE_RUNS = """
select count(*) from core.telemetry_runs
where content_sha256 = $sha and not (
    isfinite(tokens_per_sec_per_gpu) and tokens_per_sec_per_gpu > 0 and num_gpus >= 1
    and isfinite(params_b) and params_b > 0 and seq_len >= 1 and gpu is not null
    and precision in ('fp32', 'tf32', 'fp16', 'bf16', 'fp8', 'fp4'))
"""


def encode(frame: pl.DataFrame, suffix: str) -> bytes:
    if suffix == ".csv":
        return frame.write_csv().encode()
    if suffix == ".jsonl":
        return "".join(json.dumps(row) + "\n" for row in frame.to_dicts()).encode()
    out = io.BytesIO()
    frame.write_parquet(out)
    return out.getvalue()


def ingest_bytes(con: duckdb.DuckDBPyConnection, data: bytes, suffix: str, folder: Path) -> tuple[FileOutcome, Path]:
    path = folder / f"{next(NAMES)}{SQL_TEXT}{suffix}"
    path.write_bytes(data)
    return ingest_telemetry_file(con, path, configured.aliases(), AT, **configured.telemetry_options()), path


def check(con: duckdb.DuckDBPyConnection, outcome: FileOutcome, path: Path) -> None:
    assert outcome.status in ("loaded", "quarantined", "already_ingested"), outcome
    assert whole_file_violations(con) == []
    if outcome.status == "quarantined":
        errors = con.execute("select error from quarantine.rejected_files where source_file = ?",
                             [str(path)]).fetchall()
        assert errors and all(e for (e,) in errors), outcome
    if outcome.status == "loaded":
        assert con.execute(INVALID_CORE_RUNS, {"sha": outcome.content_sha256}).fetchall() == [(0,)]
        assert outcome.rows_loaded + outcome.rows_quarantined + outcome.rows_skipped == outcome.rows_read
    con.execute("select count(*) from core.telemetry_runs").fetchall()


@st.composite
def damaged(draw: st.DrawFn, suffix: str) -> bytes:
    data = encode(SAMPLE, suffix)
    way = draw(st.sampled_from(["bytes", "truncated", "encoding", "values"]))
    if way == "bytes":
        return draw(st.binary(max_size=3000))
    if way == "truncated":
        return data[: draw(st.integers(0, len(data) - 1))]
    if way == "encoding" and suffix != ".parquet":
        text = data.decode().replace("a", "\u00e9", draw(st.integers(1, 50)))
        return text.encode(draw(st.sampled_from(["latin-1", "utf-16", "cp1252"])))
    # hostile values in random cells, and in the numbers the checks rely on
    rows = SAMPLE.to_dicts()
    pool = HOSTILE_JSON if suffix == ".jsonl" else HOSTILE_TEXT
    for _ in range(draw(st.integers(1, 10))):
        row = draw(st.sampled_from(rows))
        column = draw(st.sampled_from([*NUMBERS, *SAMPLE.columns]))
        row[column] = draw(st.sampled_from(pool))
    if suffix == ".jsonl":
        return "".join(json.dumps(row) + "\n" for row in rows).encode()
    frame = pl.DataFrame(rows, schema={c: pl.String for c in SAMPLE.columns})
    return encode(frame, suffix)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_damaged_telemetry_is_loaded_sanely_or_quarantined_whole(suffix: str, con, tmp_path: Path) -> None:
    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=damaged(suffix))
    def run(data: bytes) -> None:
        outcome, path = ingest_bytes(con, data, suffix, tmp_path)
        check(con, outcome, path)

    run()


def test_named_hostile_telemetry(con, tmp_path: Path) -> None:
    header = ",".join(SAMPLE.columns)
    first = SAMPLE.head(1)
    cases = {
        # (files are keyed by their bytes: three different "empty" files, else the 2nd and 3rd are "already ingested")
        "empty csv": (b"", ".csv"),
        "empty jsonl": (b"\n\n", ".jsonl"),
        "empty parquet": (b"PAR1", ".parquet"),
        "header only": (header.encode() + b"\n", ".csv"),
        "duplicate header": ((header + ",run_id\n" + ",".join(first.row(0)) + ",other\n").encode(), ".csv"),
        "10^5-column row": ((header + "\n" + ",".join(["1"] * 100_000) + "\n").encode(), ".csv"),
        # columns outside the contract are kept in raw and ignored, however many (2 x 10^4 here: each one
        # becomes a key of the row's raw JSON, which costs seconds at 10^5). DuckDB needs a 32 KiB vector per
        # column, so 2 x 10^4 columns exceed the 600 MB ingest cap: the file must take the row-wise reader
        # (it was quarantined "out of memory" / "transaction aborted" after the ingest lifecycle landed)
        "many extra columns": ((header + "".join(f",extra_{i}" for i in range(20_000)) + "\n"
                                + ",".join(first.row(0)) + ",1" * 20_000 + "\n").encode(), ".csv"),
        "utf-16": (encode(SAMPLE, ".csv").decode().encode("utf-16"), ".csv"),
        "not a known format": (encode(SAMPLE, ".csv"), ".xlsx"),
        "SQL values": (encode(first.with_columns(run_id=pl.lit(SQL_TEXT), source=pl.lit(SQL_TEXT)), ".csv"), ".csv"),
    }
    for value in ("-5", "0", "NaN", "inf", "1e308", "1e999"):
        cases[f"throughput {value}"] = (encode(SAMPLE.with_columns(tokens_per_sec_per_gpu=pl.lit(value)), ".csv"),
                                        ".csv")
    outcomes = {}
    for name, (data, suffix) in cases.items():
        outcome, path = ingest_bytes(con, data, suffix, tmp_path)
        check(con, outcome, path)
        outcomes[name] = outcome
    for name in ("empty csv", "empty jsonl", "empty parquet", "10^5-column row", "not a known format", "utf-16"):
        assert outcomes[name].status == "quarantined", (name, outcomes[name])
    # a row of 10^5 fields under a 17-column header names its line; extra columns are kept in raw only
    assert "line 2: 100000 fields, the header has 17" in outcomes["10^5-column row"].error
    assert outcomes["many extra columns"].rows_loaded == 1
    lines = landed_lines(con, outcomes["many extra columns"].content_sha256)
    header, record = lines[1].split(","), lines[2].split(",")
    # the 17 contract columns + every extra one, as the landed file holds them
    assert (len(header), header[-1], record[-1]) == (len(SAMPLE.columns) + 20_000, "extra_19999", "1")
    for value in ("-5", "0", "NaN", "inf", "1e308", "1e999"):
        # none of the 12 sample runs loads with this throughput (1e308 tokens/s exceeds every GPU's peak)
        assert outcomes[f"throughput {value}"].rows_loaded == 0, (value, outcomes[f"throughput {value}"])
    assert outcomes["SQL values"].rows_loaded == 1
    stored = con.execute("select run_id, source, source_file from core.telemetry_runs where run_id = ?",
                         [SQL_TEXT]).fetchall()
    assert stored == [(SQL_TEXT, SQL_TEXT, outcomes["SQL values"].source_file)]
