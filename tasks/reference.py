"""Shipped reference data (GPU specs, GPU name aliases), reloaded into the warehouse on every run so
that edits to the files show up the next night."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from tasks import config
from tasks.config import ReferenceFiles
from tasks.warehouse import execute


def reference_paths(reference: ReferenceFiles | None = None) -> dict[str, Path]:
    """config/settings.toml [reference] (or `reference`) as absolute paths."""
    reference = reference or config.settings().reference
    return {name: reference.path(name) for name in ReferenceFiles.model_fields}


def read_aliases(path: Path | None = None) -> pl.DataFrame:
    """alias -> gpu. Matching is exact and case-sensitive: GCP `rtx6000` and Lambda `RTX6000` differ."""
    path = path or reference_paths()["gpu_aliases"]
    aliases = pl.read_csv(path, infer_schema=False).select("alias", "gpu")
    duplicated = aliases.filter(pl.col("alias").is_duplicated())["alias"].unique().to_list()
    if duplicated:
        raise ValueError(f"{path}: alias listed twice: {', '.join(sorted(duplicated))}")
    return aliases


def read_specs(path: Path | None = None) -> pl.DataFrame:
    path = path or reference_paths()["gpu_specs"]
    return pl.read_csv(path, infer_schema_length=None)


def resolve_gpu(frame: pl.DataFrame, name_column: str, aliases: pl.DataFrame, out: str = "gpu") -> pl.DataFrame:
    """Add `out`: the canonical GPU id for `name_column` (null where the alias table has no such name)."""
    lookup = aliases.rename({"alias": name_column, "gpu": out})
    return frame.join(lookup, on=name_column, how="left", maintain_order="left")


def load_reference_tables(con: duckdb.DuckDBPyConnection, files: dict[str, Path] | None = None) -> dict[str, int]:
    """(Re)load core.gpu_specs and core.gpu_aliases from the configured files (or `files`)."""
    files = files or reference_paths()
    read_aliases(files["gpu_aliases"])  # fails early, naming the file, on a duplicated alias
    execute(con, "common/load_gpu_specs", {"path": str(files["gpu_specs"])})
    execute(con, "common/load_gpu_aliases", {"path": str(files["gpu_aliases"])})
    specs = con.execute("select count(*) from core.gpu_specs").fetchall()[0][0]
    aliases = con.execute("select count(*) from core.gpu_aliases").fetchall()[0][0]
    return {"gpu_specs": specs, "gpu_aliases": aliases}
