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

import duckdb
import polars as pl

from tasks.contract.schema import INPUT_KINDS, REQUIRED_COLUMNS, THROUGHPUT_COLUMN, THROUGHPUT_PAIR
from tasks.ingest.registry import is_transient
from tasks.warehouse import execute, query

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


# Characters str.strip() removes (Python's whitespace, a little wider than Unicode's White_Space)
PY_WHITESPACE = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())


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


def _read_csv_rowwise(path: Path) -> pl.DataFrame:
    """The general CSV reader (quoted fields, lone CR line ends, huge fields): Python's csv module."""
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


def _read_csv(path: Path) -> pl.DataFrame:
    """CSV as text columns. A file without quotes (the common case) is split by polars, vectorised, with the
    same rules as the row-wise reader; anything else goes through Python's csv module."""
    text = path.read_bytes().decode("utf-8-sig")  # a file that is not UTF-8 is unreadable, as in the row-wise read
    if '"' in text or text.count("\r") != text.count("\r\n"):
        del text
        return _read_csv_rowwise(path)
    crlf = "\r" in text
    lines = pl.Series("line", [text])
    del text
    lines = lines.str.split("\n").explode()
    if crlf:
        lines = lines.str.strip_suffix("\r")
    longest = lines.str.len_chars().max()
    if isinstance(longest, int) and longest > csv.field_size_limit():
        return _read_csv_rowwise(path)  # a field may exceed the csv module's limit: let it say so
    header_line = lines[0]
    if not header_line:
        raise TelemetryFileError("empty CSV file: no header line")
    header = [h.strip() for h in header_line.split(",")]
    body = pl.DataFrame({"line": lines.slice(1)}).with_columns(
        (pl.int_range(pl.len(), dtype=pl.Int64) + 2).alias(SOURCE_LINE),
        pl.col("line").str.count_matches(",", literal=True).cast(pl.Int64).add(1).alias("fields"),
    )
    del lines
    # a row whose every cell is blank is skipped (csv.reader + cell.strip(), i.e. Python's whitespace)
    filled = body.select(pl.col("line").str.replace_all(",", "", literal=True).str.strip_chars(PY_WHITESPACE) != "")
    if not filled.to_series().all():
        body = body.filter(filled.to_series())
    del filled
    ragged = body.filter(pl.col("fields") != len(header)).head(1)
    if ragged.height:
        line, fields = ragged[SOURCE_LINE][0], ragged["fields"][0]
        raise TelemetryFileError(f"line {line}: {fields} fields, the header has {len(header)}")
    # a repeated column name keeps its first position and its last value (as a dict built from the row would)
    last_index = {name: index for index, name in enumerate(header)}
    split = body.select(
        pl.col("line").str.split_exact(",", len(header) - 1).struct.field(*[f"field_{i}" for i in range(len(header))])
        if len(header) > 1 else pl.col("line").alias("field_0"),
        SOURCE_LINE,
    )
    del body
    cells = split.select(
        *[
            pl.when(pl.col(f"field_{index}").str.strip_chars(PY_WHITESPACE) != "")
            .then(pl.col(f"field_{index}"))
            .alias(name)
            for name, index in last_index.items()
        ],
        SOURCE_LINE,
    )
    del split
    columns = list(last_index)
    return cells.select(
        *columns, SOURCE_LINE, pl.struct(columns).struct.json_encode().alias(RAW_VALUES)
    )


def read_parquet_table(path: Path) -> pl.DataFrame:
    """The Parquet file as polars types it (TelemetryFileError when it is not a readable Parquet file)."""
    try:
        return pl.read_parquet(path)
    except Exception as error:  # polars raises several types for a damaged file
        raise TelemetryFileError(f"unreadable Parquet file: {type(error).__name__}: {error}") from error


def _read_parquet(path: Path) -> pl.DataFrame:
    table = read_parquet_table(path)
    vectorised = _parquet_as_text(table)
    if vectorised is not None:
        return vectorised
    records = table.to_dicts()
    raw = [json.dumps(r, default=str) for r in records]
    return _frame(table.columns, records, list(range(1, len(records) + 1)), raw)


def _text_column(series: pl.Series) -> pl.Series:
    """A typed column as the text `_text` gives each value (str(value)), vectorised where polars agrees."""
    dtype = series.dtype
    if dtype == pl.String:
        return series
    if dtype.is_integer() or dtype == pl.Null:
        return series.cast(pl.String)
    if dtype == pl.Boolean:
        return pl.select(pl.when(series).then(pl.lit("True")).when(series.not_()).then(pl.lit("False"))).to_series()
    if dtype.is_float():
        # polars writes the same shortest digits as Python's repr, except in exponent form, for |x| < 1e-4
        # and NaN ('NaN' vs 'nan'): those values (few) take Python's str
        text = series.cast(pl.String)
        differs = text.str.contains("[eN]") | ((series.abs() < 1e-4) & (series != 0))
        index = differs.fill_null(False).arg_true()
        if index.len():
            text = text.scatter(index, [_text(v) for v in series.gather(index).to_list()])
        return text
    # dates, nested values and the rest: per value
    return pl.Series(series.name, [_text(v) for v in series.to_list()], dtype=pl.String)


def _parquet_as_text(table: pl.DataFrame) -> pl.DataFrame | None:
    """Parquet columns as text plus the raw JSON, vectorised; None where polars cannot encode a record as JSON
    (the row-wise path then does)."""
    try:
        raw = table.select(pl.struct(pl.all()).struct.json_encode()).to_series() if table.width else None
    except Exception:  # e.g. binary or decimal columns: the row-wise json.dumps handles them
        return None
    if raw is None:
        return None
    data = {c: _text_column(table[c]).rename(c) for c in table.columns}
    return pl.DataFrame(data).with_columns(
        pl.int_range(1, table.height + 1, dtype=pl.Int64).alias(SOURCE_LINE), raw.rename(RAW_VALUES)
    )


def separator_hint(columns: list[str]) -> str:
    """Why required columns are missing when the header came out as one column holding another separator (a
    spreadsheet's ';' export, a TSV renamed .csv): said after the missing columns; '' otherwise."""
    if len(columns) == 1:
        for separator in (";", "\t", "|"):
            if separator in columns[0]:
                return (f" (the header is one column, {columns[0][:40]!r}...: the file looks separated by "
                        f"{separator!r}, and CSV is read as comma-separated)")
    return ""


def check_required_columns(columns: list[str]) -> None:
    for column in REQUIRED_COLUMNS:
        if column not in columns:
            raise TelemetryFileError(f"missing required column {column!r}{separator_hint(columns)}")
    if THROUGHPUT_COLUMN not in columns and not all(c in columns for c in THROUGHPUT_PAIR):
        raise TelemetryFileError(
            f"missing required column {THROUGHPUT_COLUMN!r} (or the pair {' + '.join(THROUGHPUT_PAIR)})"
        )


def read_records(path: Path) -> pl.DataFrame:
    """The file's records: its own columns as text, plus SOURCE_LINE and RAW_VALUES, whatever columns it has
    (`gpucost predict` reads its input with this too, and needs fewer columns than a stored run)."""
    path = Path(path)
    readers = {"csv": _read_csv, "jsonl": _read_jsonl, "parquet": _read_parquet}
    try:
        return readers[file_format(path)](path)
    except TelemetryFileError:
        raise
    except OSError as error:
        if is_transient(error):
            raise  # retried by the flow's task (see tasks.files.is_transient)
        raise TelemetryFileError(f"unreadable file: {type(error).__name__}: {error}") from error
    except (UnicodeDecodeError, csv.Error) as error:
        raise TelemetryFileError(f"unreadable file: {type(error).__name__}: {error}") from error


def read_telemetry(path: Path) -> pl.DataFrame:
    """The file's records (read_records), with every column the contract requires of a stored run."""
    frame = read_records(path)
    check_required_columns([c for c in frame.columns if c not in (SOURCE_LINE, RAW_VALUES)])
    return frame


# Parquet column types the DuckDB path turns into text the way the row-wise reader does (str(value));
# any other type (nested, decimal, dates, binary) takes the polars/Python reader.
SCALAR_TYPES = ("VARCHAR", "BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT",
                "UTINYINT", "DOUBLE", "FLOAT", "BOOLEAN")
SCAN_BYTES = 1 << 20
# DuckDB reads a file in vectors of 2,048 values per column (32 KiB of text per column and reading thread),
# so a file of thousands of columns needs more than the ingest memory cap (config/settings.toml [ingest])
# before it reads one row, and the failed statement aborts the file's transaction. Files wider than this
# (the contract has 17 columns) take the row-wise readers, whose memory grows with the rows, not the columns.
MAX_DUCKDB_COLUMNS = 1_000


def _plain_csv(path: Path) -> bool:
    """True when the file has no quotes, no lone CR and no empty line: then its records are its lines, and
    DuckDB's reader gives exactly what the readers above give (scanned in 1 MiB blocks, not held)."""
    previous = b""
    with open(path, "rb") as fh:
        while block := fh.read(SCAN_BYTES):
            seam = previous + block[:2]  # a pattern across the blocks' boundary (the block itself is not copied)
            if b'"' in block or b"\n\n" in block or b"\n\n" in seam or b"\n\r\n" in block or b"\n\r\n" in seam:
                return False
            # every CR starts a CRLF (a CR ending the block counts as lone: the general reader)
            if b"\r" in block and (
                block.count(b"\r") != block.count(b"\r\n") + (previous[-1:] == b"\r" and block[:1] == b"\n")
            ):
                return False
            previous = block[-2:]
    return True


def _csv_header_plain(path: Path) -> bool:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        names = fh.readline().rstrip("\r\n").split(",")
    return (bool(names) and len(names) <= MAX_DUCKDB_COLUMNS and all(n == n.strip() and n for n in names)
            and len(set(names)) == len(names))


def _parquet_narrow(path: Path) -> bool:
    try:
        return len(pl.read_parquet_schema(path)) <= MAX_DUCKDB_COLUMNS
    except Exception:  # not readable as Parquet: the general reader names the problem
        return False


def transaction_usable(con: duckdb.DuckDBPyConnection) -> bool:
    """False once a statement failed while executing: DuckDB then refuses everything until a rollback (a
    statement refused while binding, e.g. a ragged CSV row found by the sniffer, leaves it usable)."""

    try:
        query(con, "common/transaction_alive").fetchall()
    except duckdb.TransactionException:
        return False
    return True


def _stage_file(con: duckdb.DuckDBPyConnection, path: Path, fmt: str) -> bool:
    """DuckDB reads a plain CSV or a narrow Parquet file into staging_telemetry_file; False when the file is
    neither, or DuckDB refuses it (the general reader then names the problem: line, field count, encoding, ...)."""
    try:
        if fmt == "csv":
            if not (_plain_csv(path) and _csv_header_plain(path)):
                return False
            execute(con, "telemetry/read_csv_text", {"path": str(path)})
        elif fmt == "parquet":
            if not _parquet_narrow(path):
                return False
            execute(con, "telemetry/read_parquet", {"path": str(path)})
        else:
            return False
    except duckdb.Error:
        if not transaction_usable(con):
            raise  # e.g. out of memory while executing: the file's transaction is aborted, nothing can follow
        return False
    return True


def _cell_as_text(name: str, kind: str, fmt: str) -> duckdb.Expression:
    """A column's cell as text, as `read_telemetry` gives it."""
    value = duckdb.ColumnExpression(name)
    text = duckdb.sqltype("VARCHAR")
    if fmt == "csv":  # a blank cell is missing (as csv.reader + strip in the readers above)
        blank = duckdb.FunctionExpression("regexp_matches", value, duckdb.ConstantExpression(r"^\s*$"))
        return duckdb.CaseExpression(blank, duckdb.ConstantExpression(None).cast(text)).otherwise(value).alias(name)
    if kind == "BOOLEAN":  # str(True) = 'True'
        return (duckdb.CaseExpression(value, duckdb.ConstantExpression("True"))
                .when(~value, duckdb.ConstantExpression("False")).alias(name))
    return value.cast(text).alias(name)


def read_into_duckdb(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Read the file with DuckDB into staging_file_records (the lifecycle's records as read): the row key
    `_row_id`, `source_line`, `raw_values` (every column of the record, as JSON) and the contract's columns
    as text (as `read_telemetry` gives them; the only ones normalised). False when the file needs the general
    readers above (quotes, blank lines, ragged rows, JSON Lines, nested Parquet values): the caller then
    reads it with `read_telemetry`. Nothing of the file passes through Python."""

    fmt = file_format(path)
    if not _stage_file(con, path, fmt):
        return False
    table = con.table("staging_telemetry_file")
    types = dict(zip(table.columns, (str(t) for t in table.types), strict=True))
    if fmt == "parquet" and any(t not in SCALAR_TYPES for t in types.values()):
        return False
    check_required_columns(list(types))
    cells = [_cell_as_text(name, kind, fmt) for name, kind in types.items()]
    order = duckdb.SQLExpression("rowid").alias("_order")
    # the record's line is its place + 1 + this (CSV: the header is line 1; Parquet: records count from 1)
    line_offset = duckdb.ConstantExpression(1 if fmt == "csv" else 0).alias("_line_offset")
    contract = [name for name in types if name in INPUT_KINDS]  # the cells normalised; the rest is in the JSON
    if fmt == "csv":  # the record as JSON: the cells (blank = null) ...
        table.project(order, *cells).project(
            duckdb.ColumnExpression("_order"), line_offset, *[duckdb.ColumnExpression(n) for n in contract],
            duckdb.SQLExpression("to_json(struct_pack(*columns(* exclude (_order))))").alias("raw_values"),
        ).create_view("telemetry_columns", replace=True)
    else:  # ... or the typed values (Parquet)
        table.project(order, line_offset,
                      *[cell for cell, name in zip(cells, types, strict=True) if name in INPUT_KINDS],
                      duckdb.SQLExpression("to_json(struct_pack(*columns(*)))").alias("raw_values"),
                      ).create_view("telemetry_columns", replace=True)
    execute(con, "telemetry/file_records")
    if fmt == "csv" and query(con, "telemetry/blank_records").fetchall()[0][0]:
        execute(con, "telemetry/drop_telemetry_records")
        return False
    return True
