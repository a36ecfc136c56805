"""The code a registered version carries (its MLflow code_paths) and the packages it needs: only what the pyfunc
runs, the model runtime and the telemetry contract it engineers features with, not the whole project.

The modules are the import closure of tasks.model.serving (read from the source's import statements, so a module
the pyfunc starts importing travels with the next version by itself); the SQL files are the ones that closure
runs to build a prediction's features in an in-memory DuckDB."""

from __future__ import annotations

import ast
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import cloudpickle
import duckdb
import mlflow
import numpy as np
import pandas as pd
import polars as pl
import pyarrow
import scipy
import sklearn

from tasks.settings import PROJECT_ROOT, SQL_DIR

PYFUNC_MODULE = "tasks.model.serving"
PACKAGE = "tasks"
# what the contract features run (tasks.model.contract_rows.ContractFeatures.build, MEMORY_SETUP first): the
# schemas, the FLOPs macros, the GPU specs and aliases loaded, the contract's normaliser (sql/contract/, run by
# tasks.contract.normalise), the feature SQL
MODEL_SQL = ("contract/reference_schema.sql", "contract/flops_macros.sql", "common/load_gpu_specs.sql",
             "common/load_gpu_aliases.sql", "contract/rules.sql", "contract/cells.sql",
             "contract/spellings_to_look_up.sql", "contract/normalised_runs.sql", "features/build_features.sql")


def pip_requirements() -> list[str]:
    """Explicit (inferring them costs seconds per model). The project code itself travels as code_paths; the
    feature engineering runs DuckDB SQL over polars frames (pyarrow between them)."""
    return [f"mlflow=={mlflow.__version__}", f"scikit-learn=={sklearn.__version__}", f"pandas=={pd.__version__}",
            f"numpy=={np.__version__}", f"polars=={pl.__version__}", f"cloudpickle=={cloudpickle.__version__}",
            f"duckdb=={duckdb.__version__}", f"pyarrow=={pyarrow.__version__}", f"scipy=={scipy.__version__}"]


def _module_file(root: Path, module: str) -> Path | None:
    for candidate in (root / f"{module.replace('.', '/')}.py", root / module.replace(".", "/") / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported(path: Path) -> Iterator[str]:
    """Every module (or module.name) an import statement of `path` names, at any depth of the file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def model_modules(root: Path = PROJECT_ROOT, start: str = PYFUNC_MODULE) -> list[Path]:
    """The project's source files `start` imports, directly or not, with their packages' __init__ files."""
    found: dict[str, Path] = {}
    todo = [start]
    while todo:
        module = todo.pop()
        if module in found or module.split(".")[0] != PACKAGE:
            continue
        path = _module_file(root, module)
        if path is None:
            continue
        found[module] = path
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += list(_imported(path))
    return sorted(found.values())


@contextmanager
def model_code_folder() -> Iterator[list[Path]]:
    """A temporary copy of the modules and SQL files a version carries, laid out as in the project: the
    code_paths to log (the `tasks` package folder and the `sql` folder)."""
    with tempfile.TemporaryDirectory(prefix="gpucost-model-code-") as folder:
        root = Path(folder)
        for path in model_modules():
            target = root / path.relative_to(PROJECT_ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        for name in MODEL_SQL:
            target = root / "sql" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(SQL_DIR / name, target)
        yield [root / PACKAGE, root / "sql"]
