"""Every reference file (data/reference/*.csv: the configured ones and the price adapters' lookup tables) is read
through one declared check (tasks/reference.py): its columns, each value's kind and bounds, a key listed once, and
a problem said in one line naming the file, the line and the column."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from tasks.prices.adapter import reference_table
from tasks.reference import (
    FOLDER_TABLES,
    REFERENCE_TABLES,
    ReferenceDataError,
    check_reference_file,
    check_reference_files,
    load_reference_tables,
)
from tasks.settings import REFERENCE_DIR, ConfigError
from tests import configured

CARBON = REFERENCE_TABLES["region_carbon"]
CARBON_HEADER = "provider,region,grid_gco2e_per_kwh,year,cfe_share,source\n"


def carbon_file(tmp_path: Path, *lines: str, name: str = "region_carbon.csv") -> Path:
    path = tmp_path / name
    path.write_text(CARBON_HEADER + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_every_shipped_reference_file_is_declared_and_passes_its_declaration() -> None:
    files = configured.reference_files()
    declared = {files[name].name for name in REFERENCE_TABLES if name in files} | set(FOLDER_TABLES)
    # a new reference file without a declaration would be loaded unchecked
    assert {p.name for p in REFERENCE_DIR.glob("*.csv")} == declared
    check_reference_files(files)
    # rows as counted by hand (lines below the header): region_carbon.csv 93, gpu_specs.csv 41, gpu_aliases.csv 105
    assert check_reference_file(files["region_carbon"], CARBON) == 93
    assert check_reference_file(files["gpu_specs"], REFERENCE_TABLES["gpu_specs"]) == 41
    assert check_reference_file(files["gpu_aliases"], REFERENCE_TABLES["gpu_aliases"]) == 105


@pytest.mark.parametrize(("value", "why"), [
    ("-500", "must be a number from 0 to 2000 (g CO2e per kWh) (got '-500')"),
    ("nan", "must be a number from 0 to 2000 (g CO2e per kWh) (got 'nan')"),
    ("inf", "must be a number from 0 to 2000 (g CO2e per kWh) (got 'inf')"),
    ("1e30", "must be a number from 0 to 2000 (g CO2e per kWh) (got '1e30')"),
    ("2000.5", "must be a number from 0 to 2000 (g CO2e per kWh) (got '2000.5')"),
    ("lots", "must be a number from 0 to 2000 (g CO2e per kWh) (got 'lots')"),
    ("3,5", None),  # a comma splits the row: one field too many
    (" ", "must be a number from 0 to 2000 (g CO2e per kWh) (got ' ')"),  # DuckDB cannot cast it
    ("", "is empty (a value is required)"),
])
def test_a_carbon_intensity_out_of_bounds_or_not_a_number_names_file_line_and_column(
        tmp_path: Path, value: str, why: str | None) -> None:
    path = carbon_file(tmp_path, "aws,us-east-1,244.76,2023,,eGRID", f"aws,us-west-2,{value},2023,,eGRID")
    with pytest.raises(ReferenceDataError) as raised:
        check_reference_file(path, CARBON)
    message = str(raised.value)
    assert "\n" not in message
    if why is None:
        assert message == f"{path}: line 3: 7 fields where the header has 6 (a comma inside a value needs quotes)"
    else:
        assert message == f"{path}: line 3: grid_gco2e_per_kwh: {why}"
    assert isinstance(raised.value, ConfigError)  # the command line's exit 2


def test_bounds_are_inclusive_and_an_empty_optional_value_is_allowed(tmp_path: Path) -> None:
    path = carbon_file(tmp_path, "gcp,a,0,2025,0,x", "gcp,b,2000,2025,1,x", "gcp,c,1.5e2,2025,,x")
    assert check_reference_file(path, CARBON) == 3


def test_a_region_listed_twice_names_both_lines(tmp_path: Path) -> None:
    path = carbon_file(tmp_path, "aws,us-east-1,244.76,2023,,a", "aws,us-west-2,100,2023,,b",
                       "aws,us-east-1,250,2023,,c")
    with pytest.raises(ReferenceDataError, match=r"line 4: provider \+ region: aws us-east-1 is listed twice "
                                                 r"\(first on line 2; one row each\)"):
        check_reference_file(path, CARBON)


def test_a_whole_number_column_refuses_a_fraction_and_a_cfe_share_above_one(tmp_path: Path) -> None:
    with pytest.raises(ReferenceDataError, match=r"line 2: year: must be a whole number from 1990 to 2100 "):
        check_reference_file(carbon_file(tmp_path, "aws,a,1,2023.5,,x"), CARBON)
    with pytest.raises(ReferenceDataError, match=r"line 2: cfe_share: must be a number from 0 to 1 "):
        check_reference_file(carbon_file(tmp_path, "aws,a,1,2023,1.2,x"), CARBON)


def test_a_quoted_value_over_two_lines_keeps_the_line_numbers_of_the_file(tmp_path: Path) -> None:
    path = carbon_file(tmp_path, 'aws,a,1,2023,,"two\nlines"', "aws,b,-1,2023,,x")
    with pytest.raises(ReferenceDataError, match=r": line 4: grid_gco2e_per_kwh: "):
        check_reference_file(path, CARBON)


def test_a_missing_column_an_empty_file_and_a_byte_that_is_not_utf8(tmp_path: Path) -> None:
    renamed = tmp_path / "renamed.csv"
    renamed.write_text("provider,region,grid_gco2_per_kwh,year,cfe_share,source\naws,a,1,2023,,x\n", encoding="utf-8")
    with pytest.raises(ReferenceDataError, match=r"renamed.csv: line 1: grid_gco2e_per_kwh: column missing "
                                                 r"\(the header has provider, region, grid_gco2_per_kwh, "):
        check_reference_file(renamed, CARBON)
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(ReferenceDataError, match=r"empty.csv: line 1: empty file"):
        check_reference_file(empty, CARBON)
    latin = tmp_path / "latin.csv"
    latin.write_bytes(CARBON_HEADER.encode() + b"aws,a,1,2023,,x\naws,b,1,2023,,Qu\xe9bec\n")
    with pytest.raises(ReferenceDataError, match=r"latin.csv: line 3: not UTF-8 text \(byte 0xe9\)"):
        check_reference_file(latin, CARBON)
    with pytest.raises(ReferenceDataError, match=r"nowhere.csv: no such file"):
        check_reference_file(tmp_path / "nowhere.csv", CARBON)


def test_the_lookup_tables_allow_comment_lines_and_are_checked_where_the_adapters_read_them(tmp_path: Path) -> None:
    folder = shutil.copytree(REFERENCE_DIR, tmp_path / "reference")
    shapes = folder / "aws_instance_gpus.csv"
    lines = shapes.read_text(encoding="utf-8").splitlines(keepends=True)
    shapes.write_text("".join([lines[0], "# a note\n", *lines[1:]]), encoding="utf-8")
    assert reference_table("aws_instance_gpus.csv", folder).height == 60
    # the 3rd data row (line 5 of the file, below the comment) with its GPU count as text
    fields = lines[3].split(",")
    fields[2] = "eight"
    shapes.write_text("".join([lines[0], "# a note\n", lines[1], lines[2], ",".join(fields), *lines[4:]]),
                      encoding="utf-8")
    with pytest.raises(ReferenceDataError, match=r"aws_instance_gpus.csv: line 5: gpu_count: must be a number above 0 "
                                                 r"and at most 1024 \(GPUs per instance\) \(got 'eight'\)"):
        reference_table("aws_instance_gpus.csv", folder)


def test_a_failing_file_loads_no_table(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    files = configured.reference_files()
    before = con.execute("select count(*), sum(grid_gco2e_per_kwh) from core.region_carbon").fetchall()
    source = files["region_carbon"].read_text(encoding="utf-8").replace(",244.76,", ",-500,", 1)
    bad = tmp_path / "region_carbon.csv"
    bad.write_text(source, encoding="utf-8")
    assert ",-500," in source
    with pytest.raises(ReferenceDataError, match="grid_gco2e_per_kwh: must be a number from 0 to 2000"):
        load_reference_tables(con, {**files, "region_carbon": bad})
    assert con.execute("select count(*), sum(grid_gco2e_per_kwh) from core.region_carbon").fetchall() == before
