"""The CSV reader: line numbers, blank rows, blank cells and repeated column names, the same with and without
quotes (a file without quotes is split by polars, one with quotes goes through Python's csv module)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.telemetry.readers import RAW_VALUES, SOURCE_LINE, TelemetryFileError, _read_csv

# Header (line 1), a blank line (2), a run (3), a row of blank cells (4), a run with CRLF and a blank cell (5),
# and run_id repeated as the last column (its last value wins, at the first position).
UNQUOTED = "run_id,gpu,run_id\n\nr1,H100-SXM,x1\n , ,\t\r\nr2, ,x2\r\n"
QUOTED = 'run_id,gpu,run_id\n\n"r1",H100-SXM,x1\n , ,\t\r\n"r2"," ",x2\r\n'


@pytest.mark.parametrize("text", [UNQUOTED, QUOTED], ids=["vectorised", "row-wise"])
def test_csv_lines_blank_rows_and_cells(text: str, tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_bytes(text.encode())
    frame = _read_csv(path)
    assert frame.columns == ["run_id", "gpu", SOURCE_LINE, RAW_VALUES]
    assert frame[SOURCE_LINE].to_list() == [3, 5]          # lines 2 and 4 are blank rows, skipped
    assert frame["run_id"].to_list() == ["x1", "x2"]       # the repeated column's last value
    assert frame["gpu"].to_list() == ["H100-SXM", None]    # a blank cell is missing
    assert [json.loads(r) for r in frame[RAW_VALUES]] == [{"run_id": "x1", "gpu": "H100-SXM"},
                                                          {"run_id": "x2", "gpu": None}]


@pytest.mark.parametrize("quote", ["", '"'], ids=["vectorised", "row-wise"])
def test_csv_row_with_the_wrong_field_count_names_its_line(quote: str, tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    path.write_bytes(f"run_id,gpu\n{quote}r1{quote},H100-SXM\n\nr2,H100-SXM,extra\n".encode())
    with pytest.raises(TelemetryFileError, match=r"^line 4: 3 fields, the header has 2$"):
        _read_csv(path)
