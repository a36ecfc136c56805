"""Read a telemetry file (CSV, JSON Lines, Parquet; chosen by extension) into text columns.

Every column of the file is kept (the raw layer stores each record whole as JSON); values become
text so that the three formats normalise identically. A file that cannot be read, or lacks a
required column, raises TelemetryFileError naming the problem (the ingest quarantines the file).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import polars as pl

from tasks.files import is_transient
from tasks.telemetry.contract import REQUIRED_COLUMNS, THROUGHPUT_COLUMN, THROUGHPUT_PAIR

SOURCE_LINE = "_source_line"  # 1-based line (CSV: where the record starts; JSON Lines) or record (Parquet)
RAW_VALUES = "_raw_values"    # the record as read, JSON text
FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}


class TelemetryFileError(ValueError):
    """The file as a whole cannot be ingested (unreadable, wrong format, missing required column)."""


def file_format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise TelemetryFileError(
            f"unsupported file type {path.suffix or '(none)'!r}: telemetry is read from {', '.join(FORMATS)}"
        )
    return fmt


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _frame(columns: list[str], records: list[dict[str, Any]], lines: list[int], raw: list[str]) -> pl.DataFrame:
    data: dict[str, list[Any]] = {c: [_text(r.get(c)) for r in records] for c in columns}
    data[SOURCE_LINE] = lines
    data[RAW_VALUES] = raw
    schema = {c: pl.String for c in columns} | {SOURCE_LINE: pl.Int64, RAW_VALUES: pl.String}
    return pl.DataFrame(data, schema=schema)


def _read_csv(path: Path) -> pl.DataFrame:
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header:
            raise TelemetryFileError("empty CSV file: no header line")
        header = [h.strip() for h in header]
        records: list[dict[str, Any]] = []
        lines: list[int] = []
        start = reader.line_num + 1
        for row in reader:
            if not any(cell.strip() for cell in row):
                start = reader.line_num + 1
                continue
            if len(row) != len(header):
                raise TelemetryFileError(f"line {start}: {len(row)} fields, the header has {len(header)}")
            records.append({h: (v if v.strip() != "" else None) for h, v in zip(header, row, strict=True)})
            lines.append(start)
            start = reader.line_num + 1
    raw = [json.dumps(r) for r in records]
    return _frame(header, records, lines, raw)


def _read_jsonl(path: Path) -> pl.DataFrame:
    columns: dict[str, None] = {}
    records: list[dict[str, Any]] = []
    lines: list[int] = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise TelemetryFileError(f"line {number}: not valid JSON ({error.msg})") from error
            if not isinstance(record, dict):
                raise TelemetryFileError(f"line {number}: a JSON object per line is expected")
            columns.update(dict.fromkeys(record))
            records.append(record)
            lines.append(number)
    raw = [json.dumps(r) for r in records]
    return _frame(list(columns), records, lines, raw)


def _read_parquet(path: Path) -> pl.DataFrame:
    try:
        table = pl.read_parquet(path)
    except Exception as error:  # noqa: BLE001 - polars raises several types for a damaged file
        raise TelemetryFileError(f"unreadable Parquet file: {type(error).__name__}: {error}") from error
    records = table.to_dicts()
    raw = [json.dumps(r, default=str) for r in records]
    return _frame(table.columns, records, list(range(1, len(records) + 1)), raw)


def check_required_columns(columns: list[str]) -> None:
    for column in REQUIRED_COLUMNS:
        if column not in columns:
            raise TelemetryFileError(f"missing required column {column!r}")
    if THROUGHPUT_COLUMN not in columns and not all(c in columns for c in THROUGHPUT_PAIR):
        raise TelemetryFileError(
            f"missing required column {THROUGHPUT_COLUMN!r} (or the pair {' + '.join(THROUGHPUT_PAIR)})"
        )


def read_telemetry(path: Path) -> pl.DataFrame:
    """The file's records: its own columns as text, plus SOURCE_LINE and RAW_VALUES."""
    path = Path(path)
    readers = {"csv": _read_csv, "jsonl": _read_jsonl, "parquet": _read_parquet}
    try:
        frame = readers[file_format(path)](path)
    except TelemetryFileError:
        raise
    except OSError as error:
        if is_transient(error):
            raise  # retried by the flow's task (see tasks.files.is_transient)
        raise TelemetryFileError(f"unreadable file: {type(error).__name__}: {error}") from error
    except (UnicodeDecodeError, csv.Error) as error:
        raise TelemetryFileError(f"unreadable file: {type(error).__name__}: {error}") from error
    check_required_columns([c for c in frame.columns if c not in (SOURCE_LINE, RAW_VALUES)])
    return frame
