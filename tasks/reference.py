"""Shipped reference data (GPU specs, GPU name aliases), reloaded into the warehouse on every run so
that edits to the files show up the next night."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

import duckdb
import polars as pl

from tasks.config import Strict
from tasks.settings import resolve_project_path
from tasks.warehouse import execute

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


def read_aliases(path: Path) -> pl.DataFrame:
    """alias -> gpu. Matching is exact and case-sensitive: GCP `rtx6000` and Lambda `RTX6000` differ."""
    aliases = pl.read_csv(path, infer_schema=False).select("alias", "gpu")
    duplicated = aliases.filter(pl.col("alias").is_duplicated())["alias"].unique().to_list()
    if duplicated:
        raise ValueError(f"{path}: alias listed twice: {', '.join(sorted(duplicated))}")
    return aliases


# Reference tables the ranking joins (provider + instance type, provider + region): loaded where `files` names them.
RANKING_REFERENCE = {"instance_machines": "core.instance_machines", "region_carbon": "core.region_carbon"}


def load_reference_tables(con: duckdb.DuckDBPyConnection, files: dict[str, Path]) -> dict[str, int]:
    """(Re)load core.gpu_specs and core.gpu_aliases from `files` (reference_paths), and the ranking's
    core.instance_machines and core.region_carbon where `files` names them."""
    read_aliases(files["gpu_aliases"])  # fails early, naming the file, on a duplicated alias
    execute(con, "common/load_gpu_specs", {"path": str(files["gpu_specs"])})
    execute(con, "common/load_gpu_aliases", {"path": str(files["gpu_aliases"])})
    counts = {
        "gpu_specs": con.execute("select count(*) from core.gpu_specs").fetchall()[0][0],
        "gpu_aliases": con.execute("select count(*) from core.gpu_aliases").fetchall()[0][0],
    }
    for name, table in RANKING_REFERENCE.items():
        if name in files:
            require_unique_keys(files[name], ("provider", "instance_type" if name == "instance_machines" else "region"))
            execute(con, f"common/load_{name}", {"path": str(files[name])})
            counts[name] = con.table(table).aggregate("count(*)").fetchall()[0][0]
    return counts


def require_unique_keys(path: Path, key: tuple[str, ...]) -> None:
    """A reference file lists each key once (two rows for one instance type would double its offers)."""
    frame = pl.read_csv(path, infer_schema=False, columns=list(key))
    twice = frame.filter(pl.struct(list(key)).is_duplicated()).unique()
    if not twice.is_empty():
        listed = ", ".join(" ".join(row) for row in twice.rows())
        raise ValueError(f"{path}: listed twice ({' + '.join(key)}): {listed}")
