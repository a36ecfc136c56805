"""The record hash the ingest stores with every run (sql/contract/normalised_runs.sql): the SHA-256 of each
normalised value as polars writes it, as the first stored runs were hashed. If it changed, every run stored so far
would read as replaced on its next ingest."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from tasks.contract.schema import LATE_OPTIONAL_COLUMNS, NORMALISED_COLUMNS, TelemetryValidation
from tasks.ingest.lifecycle import FileContext
from tasks.ingest.source import FileSource
from tasks.telemetry.ingest import TelemetryRuns
from tasks.telemetry.readers import RAW_VALUES, SOURCE_LINE
from tests import configured
from tests.contract.test_normalise import awkward_records


def polars_record_hash(normalised: pl.DataFrame) -> list[str]:
    """The record hash as the stored runs were made: each value as polars writes it, joined by U+001F, null as
    U+0000, each late optional column as U+001F name=value where given."""
    base = [pl.col(c).cast(pl.String).fill_null("\x00") for c in NORMALISED_COLUMNS if c not in LATE_OPTIONAL_COLUMNS]
    late = [pl.when(pl.col(c).is_null()).then(pl.lit("")).otherwise(pl.lit(f"\x1f{c}=") + pl.col(c).cast(pl.String))
            for c in LATE_OPTIONAL_COLUMNS]
    texts = normalised.select(pl.concat_str([pl.concat_str(base, separator="\x1f"), *late])).to_series().to_list()
    return [hashlib.sha256(text.encode()).hexdigest() for text in texts]


def test_the_record_hash_is_each_value_as_polars_writes_it(con) -> None:
    records = awkward_records()
    records = records.with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias(SOURCE_LINE),
        pl.Series(RAW_VALUES, [json.dumps(r) for r in records.to_dicts()]))
    dataset = TelemetryRuns(configured.aliases(), configured.vocabulary(), TelemetryValidation(), records)
    con.execute("begin transaction")
    dataset.read_and_stage(con, FileContext(FileSource(Path("awkward.jsonl")), "0" * 64, datetime.now(UTC)))
    staged = con.table("staging_file_rows").order("_row_id").select(*NORMALISED_COLUMNS, "record_hash").pl()
    con.execute("rollback")
    # awkward values: 1e-5 (polars writes 1e-5 <= |x| < 1e-4 positionally: 0.00001), 1.234e-7, 1e16, mfu 4.1e-05,
    # a network of 1.5e-9 Gb/s, timestamps with microseconds and offsets
    assert staged.height == 60
    assert staged["record_hash"].to_list() == polars_record_hash(staged)
