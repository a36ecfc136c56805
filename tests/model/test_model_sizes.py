"""The model package stays readable (issue "The model as a package"): short functions, a short orchestration, and
the typed config read as attributes, never dumped back to a dict."""

from __future__ import annotations

import ast
import re

from tasks.settings import PROJECT_ROOT

MODEL_DIR = PROJECT_ROOT / "tasks" / "model"


def test_no_function_in_the_model_package_is_over_80_lines() -> None:
    long = []
    for path in sorted(MODEL_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 80:
                    long.append(f"{path.name}:{node.name} {lines}")
    assert not long


def test_the_training_orchestration_stays_short() -> None:
    assert len((MODEL_DIR / "training.py").read_text().splitlines()) <= 300


def test_the_model_package_reads_its_config_typed() -> None:
    dumped = re.compile(r"\.model_dump\(|\bconfig\[\"|\bcfg\[\"")
    found = [f"{p.name}:{n}" for p in sorted(MODEL_DIR.glob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if dumped.search(line)]
    assert not found
