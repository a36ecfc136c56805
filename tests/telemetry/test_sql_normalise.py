"""The ingest's SQL normalisation (sql/telemetry/normalise_runs.sql) against the polars normaliser
(tasks/telemetry/normalise.py::normalise_runs, which prediction inputs use) on awkward cells: the same contract
values, the same unparsed_fields and the same record hash. The hash is the test that a stored run is unchanged: it
must stay the SHA-256 of each value as polars writes it, or every run stored so far would read as replaced."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
from polars.testing import assert_frame_equal

from tasks.ingest.lifecycle import FileContext
from tasks.ingest.source import FileSource
from tasks.telemetry.config import TelemetryValidation
from tasks.telemetry.contract import INPUT_KINDS, LATE_OPTIONAL_COLUMNS, NORMALISED_COLUMNS
from tasks.telemetry.ingest import TelemetryRuns
from tasks.telemetry.normalise import normalise_runs
from tasks.telemetry.readers import RAW_VALUES, SOURCE_LINE
from tests import configured

# A run every cell of which reads; each row below changes one cell of it.
BASE = {"run_id": "r", "gpu": "H100-SXM", "num_gpus": "8", "params_b": "7", "seq_len": "4096", "precision": "bf16",
        "tokens_per_sec_per_gpu": "3000.5", "recorded_at": "2025-01-02T03:04:05Z", "workload": "sft",
        "activation_checkpointing": "full", "mfu": "0.41", "scale_out_gbps_per_gpu": "400"}
AWKWARD: dict[str, list[str | None]] = {
    # polars writes 1e-5 <= |x| < 1e-4 positionally and other exponents without a leading zero; NaN, inf;
    # Unicode white space around a number; a comma, two signs, an overflow; a blank cell
    "params_b": ["1e-5", "-2.5e-5", "1.234e-7", "1e-300", "1e16", "123456789.123", "nan", "inf", "-0", " 7 ",
                 "\u00a07\u3000", "1,5", "+-1", "7.", ".5", "1e400", "1e", "   ", "0x10", "1_0"],
    "num_gpus": ["8.0", "2.5", "1e3", "9223372036854775808", " 16", "eight", "-4", "+8"],
    "recorded_at": ["2025-01-02 03:04:05 UTC", "2025-01-02T03:04:05.123456+05:30", "2025-02-30T00:00:00",
                    "2025-01-02T24:00:00", "2025-01-02", "20250102T030405", " 2025-01-02T03:04:05Z",
                    "2025-01-02T03:04:05.1234567Z", "0999-12-31T00:00:00"],
    "precision": ["BF16", " bf16 ", "fp8-linear(rowwise, fsdp)", "int3", "   "],
    "workload": ["LoRA", "rlhf", "  ", None],
    "activation_checkpointing": ["True", "sometimes", " full "],
    # Unicode white space inside a GPU name (no-break, thin, vertical tab): one space, as Python's str.split sees it
    "gpu": [" H100-SXM ", "h100-sxm", "Z9000", "NVIDIA\u00a0H100 80GB HBM3", "nvidia  h100\u2009pcie", "nvidia\x0bl4"],
    "mfu": ["4.1e-05", "0.00001"],
    "scale_out_gbps_per_gpu": ["1.5e-9"],
    "tokens_per_sec_per_gpu": [None],
}


def awkward_records() -> pl.DataFrame:
    rows = [BASE] + [{**BASE, column: value} for column, values in AWKWARD.items() for value in values]
    rows = [{**row, "run_id": f"r{i}"} for i, row in enumerate(rows)]
    frame = pl.DataFrame(rows, schema={c: pl.String for c in BASE})
    return frame.with_columns(
        tokens_processed=pl.lit("1e9"), wall_seconds=pl.lit("100"),  # throughput where the cell is blank
    ).with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias(SOURCE_LINE),
        pl.Series(RAW_VALUES, [json.dumps(r) for r in rows]),
    )


def polars_record_hash(normalised: pl.DataFrame) -> list[str]:
    """The record hash as the stored runs were made: each value as polars writes it, joined by U+001F, null as
    U+0000, each late optional column as U+001F name=value where given."""
    base = [pl.col(c).cast(pl.String).fill_null("\x00") for c in NORMALISED_COLUMNS if c not in LATE_OPTIONAL_COLUMNS]
    late = [pl.when(pl.col(c).is_null()).then(pl.lit("")).otherwise(pl.lit(f"\x1f{c}=") + pl.col(c).cast(pl.String))
            for c in LATE_OPTIONAL_COLUMNS]
    texts = normalised.select(pl.concat_str([pl.concat_str(base, separator="\x1f"), *late])).to_series().to_list()
    return [hashlib.sha256(text.encode()).hexdigest() for text in texts]


def same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_sql_and_polars_normalise_awkward_cells_alike(con) -> None:
    records = awkward_records()
    contract = records.select([c for c in records.columns if c in INPUT_KINDS])
    expected = normalise_runs(contract, configured.aliases(), configured.vocabulary())
    dataset = TelemetryRuns(configured.aliases(), configured.vocabulary(), TelemetryValidation(), records)
    con.execute("begin transaction")
    dataset.read_and_stage(con, FileContext(FileSource(Path("awkward.jsonl")), "0" * 64, datetime.now(UTC)))
    columns = [*NORMALISED_COLUMNS, "workload_name", "unparsed_fields", "record_hash"]
    staged = con.table("staging_file_rows").order("_row_id").select(*columns).pl()
    con.execute("rollback")

    assert staged.height == records.height == 60
    expected = expected.select(*NORMALISED_COLUMNS, "workload_name", "unparsed_fields").with_columns(
        record_hash=pl.Series(polars_record_hash(expected)))
    for column in columns:
        pairs = list(zip(staged[column].to_list(), expected[column].to_list(), strict=True))
        assert all(same(a, b) for a, b in pairs), (column, [(a, b) for a, b in pairs if not same(a, b)])
    assert_frame_equal(staged.select("record_hash"), expected.select("record_hash"))
    # worked out by hand: row 1 reads params_b 1e-5, row 10 " 7 " as 7; row 12 names "1,5" as unreadable, rows 7
    # and 8 "nan" and "inf" (no measurement); rows 53-55 are H100-SXM, H100-PCIe and L4 with Unicode spaces; row 56
    # reads mfu 4.1e-05; row 59 has no throughput: 1e9 tokens / 100 s / 8 GPUs = 1,250,000 tokens/s per GPU
    assert staged["params_b"][1] == 1e-5 and staged["params_b"][10] == 7.0
    assert staged["unparsed_fields"][10] is None and staged["unparsed_fields"][12] == "params_b='1,5'"
    assert (staged["unparsed_fields"][7], staged["unparsed_fields"][8]) == ("params_b='nan'", "params_b='inf'")
    assert staged["gpu"][53:56].to_list() == ["H100-SXM", "H100-PCIe", "L4"]
    assert staged["mfu_reported"][56] == 4.1e-05
    assert staged["tokens_per_sec_per_gpu"][59] == 1_250_000.0
