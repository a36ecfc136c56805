"""Shipped reference data (GPU specs, GPU name aliases, model shapes, machines, grid carbon, the price adapters'
lookup tables), checked like input and reloaded into the warehouse on every run so that edits to the files show
up the next night.

Every reference file is declared once here (`REFERENCE_TABLES`): its columns with their kind (text, number,
integer), whether a value is required, the bounds a number must fall within (finite, physical or sane), and the
columns that make a row unique. One check (`check_reference_file`) reads any of them against its declaration
before anything uses it, and a problem is ONE line naming the file, the line and the column, e.g.
`data/reference/region_carbon.csv: line 5: grid_gco2e_per_kwh: must be a number from 0 to 2000 (g CO2e per kWh)
(got '-500')`, raised as ReferenceDataError (a configuration error: exit 2 before any flow starts, as the command
line checks every reference file with the config files).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import duckdb
import polars as pl

from tasks.config import Strict, shown
from tasks.settings import ConfigError, resolve_project_path
from tasks.sql_files import execute

ReferenceName = Literal["folder", "gpu_specs", "gpu_aliases", "model_shapes", "matmul_ceilings", "instance_machines",
                        "region_carbon"]


class ReferenceFiles(Strict):
    """config/settings.toml [reference]: every reference-data file, in one place."""

    folder: str = "data/reference"   # the price adapters' lookup tables, read by file name
    gpu_specs: str = "data/reference/gpu_specs.csv"
    gpu_aliases: str = "data/reference/gpu_aliases.csv"
    model_shapes: str = "data/reference/model_shapes.csv"
    matmul_ceilings: str = "data/reference/gpu_matmul_ceilings.csv"
    instance_machines: str = "data/reference/instance_machines.csv"
    region_carbon: str = "data/reference/region_carbon.csv"

    def path(self, name: ReferenceName) -> Path:
        return resolve_project_path(getattr(self, name))


def reference_paths(reference: ReferenceFiles) -> dict[str, Path]:
    """config/settings.toml [reference] as absolute paths."""
    return {name: reference.path(name) for name in get_args(ReferenceName)}


class ReferenceDataError(ConfigError):
    """A reference file that cannot be used as it is: one line naming the file, the line and the column."""


# ------------------------------------------------------------------------------------------ what each file holds

# A grid's carbon intensity, g CO2e per kWh: no grid emits less than nothing, and none reaches 2,000 (lignite
# generation alone is ~1,000-1,200; the dirtiest national grids ~900-1,100). Also bounds config/ranking.toml
# [carbon] owned_gco2e_per_kwh.
MAX_GRID_GCO2E_PER_KWH = 2000.0


@dataclass(frozen=True)
class Column:
    """One declared column of a reference file. A number is finite, written with a point (no separators), and
    within [ge or gt, le]; an integer is whole. An empty value is allowed unless `required`."""

    name: str
    kind: Literal["text", "number", "integer"] = "text"
    required: bool = False
    ge: float | None = None  # at least
    gt: float | None = None  # above
    le: float | None = None  # at most
    unit: str = ""

    def problem(self, value: str) -> str | None:
        """Why `value` cannot stand in this column, or None."""
        text = value.strip()
        if value == "" or (text == "" and self.kind == "text"):  # an empty number is null; spaces are not
            return "is empty (a value is required)" if self.required else None
        if self.kind == "text":
            return None
        pattern = INTEGER if self.kind == "integer" else NUMBER
        number = float(text) if pattern.fullmatch(text) else math.nan
        if not (math.isfinite(number) and (self.ge is None or number >= self.ge)
                and (self.gt is None or number > self.gt) and (self.le is None or number <= self.le)):
            return f"must be {self.expected()} (got {value!r})"
        return None

    def expected(self) -> str:
        kind = "a whole number" if self.kind == "integer" else "a number"
        if self.ge is not None:
            low = f"from {self.ge:g}" if self.le is not None else f"of at least {self.ge:g}"
        else:
            low = f"above {self.gt:g}" if self.gt is not None else ""
        high = ("" if self.le is None else f"to {self.le:g}" if self.ge is not None
                else f"and at most {self.le:g}" if self.gt is not None else f"of at most {self.le:g}")
        unit = f" ({self.unit})" if self.unit else ""
        return " ".join(part for part in (kind, low, high) if part) + unit


# a number as the loaders cast it (DuckDB `::double`): digits with an optional point and exponent; no `nan`,
# `inf`, thousands separators or decimal commas
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
INTEGER = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class ReferenceTable:
    """A reference file's declaration: its columns (others are allowed and ignored), the columns that make a row
    unique, and whether lines starting with `#` are comments (the price adapters' lookup tables)."""

    columns: tuple[Column, ...]
    key: tuple[str, ...]
    comments: bool = False


def _text(*names: str, required: bool = False) -> tuple[Column, ...]:
    return tuple(Column(name, required=required) for name in names)


def _count(name: str, unit: str, required: bool = True, high: float = 1024) -> Column:
    """GPUs, vCPUs and the like: above 0 (a partitioned GPU is a fraction) and at most `high`."""
    return Column(name, "number", required, gt=0, le=high, unit=unit)


def _whole(name: str, low: float, high: float, unit: str, required: bool = False) -> Column:
    return Column(name, "integer", required, ge=low, le=high, unit=unit)


def _positive(name: str, high: float, unit: str, required: bool = False) -> Column:
    return Column(name, "number", required, gt=0, le=high, unit=unit)


# Bounds are physical or sane limits (a 10x typo or a unit mix-up is out of them), well outside every shipped row
MAX_TFLOPS = 100_000.0  # dense peak per GPU; the largest shipped: 15,000 (fp4)
MAX_WATTS = 10_000.0  # per GPU board
MAX_GBPS = 100_000.0  # Gb/s of network; as config/ranking.toml [machines] default_scale_out_gbps_per_gpu

# Configured files by their config/settings.toml [reference] key; the lookup tables of the [reference] folder by
# file name (tasks/prices/adapter.py::reference_table reads them with `#` comments).
REFERENCE_TABLES: dict[str, ReferenceTable] = {
    "gpu_specs": ReferenceTable((
        Column("gpu", required=True), *_text("vendor", "architecture", "form_factor"),
        _positive("memory_gb", 10_000, "GB per GPU", required=True),
        _positive("mem_bandwidth_tbps", 1000, "TB/s per GPU"),
        _positive("fp16_dense_tflops", MAX_TFLOPS, "TFLOP/s"), _positive("bf16_dense_tflops", MAX_TFLOPS, "TFLOP/s"),
        _positive("fp8_dense_tflops", MAX_TFLOPS, "TFLOP/s"), _positive("fp4_dense_tflops", MAX_TFLOPS, "TFLOP/s"),
        _positive("tdp_w", MAX_WATTS, "W per GPU"), Column("interconnect"),
        _positive("intra_node_bw_gbps_unidir", MAX_GBPS, "GB/s per direction"),
        _whole("scale_up_domain_gpus", 1, 100_000, "GPUs", required=True),
        _positive("scale_out_gbps_per_gpu", MAX_GBPS, "Gb/s per GPU", required=True),
        _whole("release_year", 1990, 2100, "year"), *_text("source", "notes"),
    ), key=("gpu",)),
    "gpu_aliases": ReferenceTable((*_text("alias", "gpu", required=True), Column("note")), key=("alias",)),
    "model_shapes": ReferenceTable((
        Column("model_name", required=True),
        _whole("n_layers", 1, 10_000, "layers", required=True), _whole("d_model", 1, 1_000_000, "", required=True),
        _whole("n_heads", 1, 10_000, "heads"), _whole("n_kv_heads", 1, 10_000, "heads"),
        _positive("head_dim", 100_000, ""), _whole("attention_layers", 0, 10_000, "layers"), Column("attention"),
        _whole("vocab", 1, 100_000_000, "tokens"), _whole("dense_ffn", 1, 10_000_000, ""),
        _whole("ffn_matrices", 1, 3, "matrices", required=True), _whole("moe_experts", 1, 100_000, "experts"),
        _whole("moe_top_k", 1, 100_000, "experts"), _whole("moe_shared_experts", 0, 100_000, "experts"),
        _whole("moe_expert_ffn", 1, 10_000_000, ""), _whole("moe_dense_layers", 0, 10_000, "layers"),
        Column("source"),
    ), key=("model_name",)),
    "matmul_ceilings": ReferenceTable((
        Column("gpu", required=True),
        _positive("bf16_mamf_tflops", MAX_TFLOPS, "TFLOP/s", required=True),
        _positive("bf16_theory_tflops", MAX_TFLOPS, "TFLOP/s", required=True),
        _positive("fp8_mamf_tflops", MAX_TFLOPS, "TFLOP/s"), _positive("fp8_theory_tflops", MAX_TFLOPS, "TFLOP/s"),
        _positive("mamf_power_w", MAX_WATTS, "W", required=True), *_text("source", "note"),
    ), key=("gpu",)),
    "instance_machines": ReferenceTable((
        *_text("provider", "instance_type", required=True), _count("gpus", "GPUs per instance"),
        _whole("scale_up_domain_gpus", 1, 100_000, "GPUs", required=True), Column("scale_up_kind"),
        _positive("network_gbps", 100 * MAX_GBPS, "Gb/s per instance"), *_text("network_kind", "source"),
    ), key=("provider", "instance_type")),
    "region_carbon": ReferenceTable((
        *_text("provider", "region", required=True),
        Column("grid_gco2e_per_kwh", "number", True, ge=0, le=MAX_GRID_GCO2E_PER_KWH, unit="g CO2e per kWh"),
        _whole("year", 1990, 2100, "year", required=True),
        Column("cfe_share", "number", ge=0, le=1, unit="share of carbon-free energy"), Column("source"),
    ), key=("provider", "region")),
    # the [reference] folder's lookup tables (the price adapters'), by file name
    "aws_az_id_regions.csv": ReferenceTable(
        (*_text("az_id_prefix", "region", required=True), Column("source")), key=("az_id_prefix",), comments=True),
    "aws_instance_gpus.csv": ReferenceTable((
        *_text("instance_type", "gpu_name", required=True), _count("gpu_count", "GPUs per instance"),
        _positive("gpu_memory_gb", 10_000, "GB per GPU"), _count("vcpus", "vCPUs", high=100_000),
        _positive("memory_gb", 1_000_000, "GiB"), Column("source"),
    ), key=("instance_type",), comments=True),
    "azure_vm_gpus.csv": ReferenceTable((
        *_text("arm_sku_name", "gpu_name", required=True), _count("gpu_count", "GPUs per VM"),
        _positive("gpu_memory_gb", 10_000, "GB per GPU"), _count("vcpus", "vCPUs", high=100_000),
        _positive("memory_gb", 1_000_000, "GiB"), Column("source"),
    ), key=("arm_sku_name",), comments=True),
    "gcp_accelerator_hosts.csv": ReferenceTable((
        Column("accelerator", required=True), _count("accelerator_count", "GPUs"),
        Column("host_instance_type", required=True), Column("note"),
    ), key=("accelerator", "accelerator_count", "host_instance_type"), comments=True),
    "gcp_machine_shapes.csv": ReferenceTable((
        *_text("machine_type", "family", "gpu_name", required=True), _count("gpu_count", "GPUs per VM"),
        _count("vcpus", "vCPUs", high=100_000), _positive("memory_gib", 1_000_000, "GiB", required=True),
        Column("source"),
    ), key=("machine_type",), comments=True),
    "gpu_instance_overrides.csv": ReferenceTable((
        *_text("provider", "instance_type_pattern", "gpu", required=True),
        _count("gpu_count", "GPUs per instance", required=False), Column("note"),
    ), key=("provider", "instance_type_pattern"), comments=True),
}

# The lookup tables the [reference] folder must hold (tasks/prices/adapter.py::reference_table reads them by name).
FOLDER_TABLES = tuple(name for name in REFERENCE_TABLES if name.endswith(".csv"))


# --------------------------------------------------------------------------------------------------- the check


def _lines(path: Path, comments: bool) -> Iterator[str]:
    """The file's lines as text (a comment line blanked, so that line numbers stay the file's), or
    ReferenceDataError naming the line of a byte that is not UTF-8."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ReferenceDataError(f"{shown(path)}: no such file (config/settings.toml [reference] names it)") from None
    except IsADirectoryError:
        raise ReferenceDataError(f"{shown(path)}: a folder, not a CSV file") from None
    except OSError as error:
        raise ReferenceDataError(f"{shown(path)}: cannot be read ({error.strerror or error})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        number = data[: error.start].count(b"\n") + 1
        raise ReferenceDataError(f"{shown(path)}: line {number}: not UTF-8 text (byte 0x{data[error.start]:02x})") \
            from None
    for line in io.StringIO(text, newline=""):  # as csv reads a file: the line ends kept
        yield "\n" if comments and line.startswith("#") else line


def check_reference_file(path: Path, table: ReferenceTable) -> int:
    """Read `path` against its declaration: the declared columns in the header, as many fields on every line as
    the header has, each value of its kind and within its bounds, each key once. Returns the number of rows;
    ReferenceDataError (one line: file, line, column, why) at the first problem."""
    reader = csv.reader(_lines(path, table.comments), strict=True)
    header: list[str] | None = None
    first_line: dict[tuple[str, ...], int] = {}
    rows, start = 0, 1
    try:
        for record in reader:
            line, start = start, reader.line_num + 1  # a quoted value may span lines: the record's first line
            if not record:  # a blank (or comment) line
                continue
            if header is None:
                header = record
                missing = [c.name for c in table.columns if c.name not in header]
                if missing:
                    raise ReferenceDataError(
                        f"{shown(path)}: line {line}: {missing[0]}: column missing (the header has "
                        f"{', '.join(header)})")
                continue
            if len(record) != len(header):
                raise ReferenceDataError(f"{shown(path)}: line {line}: {len(record)} fields where the header has "
                                         f"{len(header)} (a comma inside a value needs quotes)")
            values = dict(zip(header, record, strict=True))
            for column in table.columns:
                problem = column.problem(values[column.name])
                if problem is not None:
                    raise ReferenceDataError(f"{shown(path)}: line {line}: {column.name}: {problem}")
            key = tuple(values[name] for name in table.key)
            if key in first_line:
                raise ReferenceDataError(
                    f"{shown(path)}: line {line}: {' + '.join(table.key)}: {' '.join(key)} is listed twice (first "
                    f"on line {first_line[key]}; one row each)")
            first_line[key] = line
            rows += 1
    except csv.Error as error:
        raise ReferenceDataError(f"{shown(path)}: line {reader.line_num}: not CSV ({error})") from None
    if header is None:
        raise ReferenceDataError(f"{shown(path)}: line 1: empty file (a header line is needed: "
                                 f"{', '.join(c.name for c in table.columns)})")
    return rows


def reference_files_to_check(files: dict[str, Path]) -> list[tuple[Path, ReferenceTable]]:
    """The files `files` names (reference_paths, or some of them), with the [reference] folder's lookup tables
    where it names the folder."""
    checked = [(path, REFERENCE_TABLES[name]) for name, path in files.items() if name in REFERENCE_TABLES]
    if "folder" in files:
        checked += [(files["folder"] / name, REFERENCE_TABLES[name]) for name in FOLDER_TABLES]
    return checked


def check_reference_files(files: dict[str, Path]) -> None:
    """Every file `files` names checked against its declaration (ReferenceDataError at the first problem): the
    command line runs this over reference_paths before any flow starts."""
    for path, table in reference_files_to_check(files):
        check_reference_file(path, table)


# ----------------------------------------------------------------------------------------------- the loaders


def read_aliases(path: Path) -> pl.DataFrame:
    """alias -> gpu. Matching is exact and case-sensitive: GCP `rtx6000` and Lambda `RTX6000` differ."""
    check_reference_file(path, REFERENCE_TABLES["gpu_aliases"])  # each alias once, naming the line
    return pl.read_csv(path, infer_schema=False).select("alias", "gpu")


# Reference tables the ranking joins (provider + instance type, provider + region): loaded where `files` names them.
RANKING_REFERENCE = {"instance_machines": "core.instance_machines", "region_carbon": "core.region_carbon"}


def load_reference_tables(con: duckdb.DuckDBPyConnection, files: dict[str, Path]) -> dict[str, int]:
    """(Re)load core.gpu_specs and core.gpu_aliases from `files` (reference_paths), and the ranking's
    core.instance_machines and core.region_carbon where `files` names them; every file `files` names is checked
    first (ReferenceDataError), so no table is loaded from a file that fails."""
    check_reference_files(files)
    execute(con, "common/load_gpu_specs", {"path": str(files["gpu_specs"])})
    execute(con, "common/load_gpu_aliases", {"path": str(files["gpu_aliases"])})
    counts = {
        "gpu_specs": con.execute("select count(*) from core.gpu_specs").fetchall()[0][0],
        "gpu_aliases": con.execute("select count(*) from core.gpu_aliases").fetchall()[0][0],
    }
    for name, table in RANKING_REFERENCE.items():
        if name in files:
            execute(con, f"common/load_{name}", {"path": str(files[name])})
            counts[name] = con.table(table).aggregate("count(*)").fetchall()[0][0]
    return counts


def require_unique_keys(path: Path, key: tuple[str, ...]) -> None:
    """A reference file lists each key once (two rows for one instance type would double its offers): the key
    part of the declared check, for a file read with `key` alone."""
    check_reference_file(path, ReferenceTable(tuple(Column(name) for name in key), key))
