"""The registered model carries only itself: a fresh process elsewhere loads `models:/token-efficiency@champion`
and predicts; a copy of its folder predicts the same where the project cannot be imported at all; its code folder
holds the pyfunc's modules and the SQL it runs, nothing of ingest, fetch, providers, publishing or the DDL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from tasks.model.tracking import connect_tracking
from tests import configured
from tests.conftest import FIXTURES

PREDICT_INPUT = FIXTURES / "model_predict_input.csv"
COLUMNS = ("predicted_tokens_per_sec_per_gpu", "predicted_low", "predicted_high")

# run in a fresh interpreter: load MODEL, predict the rows of INPUT, print the predictions as JSON; with BLOCK set,
# the project's own import path (the editable install's finder) is removed first, so only the model's copy of the
# code can be imported
SCRIPT = """
import json, os, sys
if os.environ.get("BLOCK"):
    sys.meta_path = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")]
    sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f)]
import warnings; warnings.simplefilter("ignore")
import mlflow, pandas as pd
model = mlflow.pyfunc.load_model(os.environ["MODEL"])
out = model.predict(pd.read_csv(os.environ["INPUT"]))
import tasks
print(json.dumps({"tasks": tasks.__file__, "rows": json.loads(out.to_json(orient="records"))}))
"""


def _fresh(model: str, cwd: Path, env: dict[str, str]) -> dict[str, object]:
    # nothing of this session's state: the process finds the store (and only the store) through `env`
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("GPUCOST_", "MLFLOW_"))}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**inherited, **env, "MODEL": model, "INPUT": str(PREDICT_INPUT)})
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _same(rows: object, expected: pd.DataFrame) -> None:
    frame = pd.DataFrame(rows)
    for name in COLUMNS:
        assert frame[name].to_numpy() == pytest.approx(expected[name].to_numpy(), rel=1e-9, nan_ok=True)
    assert [None if pd.isna(v) else v for v in frame["unscored_reason"]] == [
        None if pd.isna(v) else v for v in expected["unscored_reason"]]
    assert [None if pd.isna(v) else v for v in frame["extrapolation"]] == [
        None if pd.isna(v) else v for v in expected["extrapolation"]]


@pytest.mark.slow
def test_champion_loads_and_predicts_in_a_fresh_process_elsewhere_and_its_copy_without_the_project(
        in_trained_home, tmp_path: Path) -> None:
    uri = connect_tracking(configured.resources().tracking_uri, create_experiment=False).uri
    mlflow.set_tracking_uri(uri)
    expected = mlflow.pyfunc.load_model("models:/token-efficiency@champion").predict(pd.read_csv(PREDICT_INPUT))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    by_alias = _fresh("models:/token-efficiency@champion", elsewhere,
                      {"MLFLOW_TRACKING_URI": uri, "GPUCOST_HOME": str(in_trained_home[0])})
    _same(by_alias["rows"], expected)

    copy = Path(mlflow.artifacts.download_artifacts("models:/token-efficiency@champion",
                                                    dst_path=str(tmp_path / "copy")))
    alone = _fresh(str(copy), elsewhere, {"BLOCK": "1"})
    assert str(alone["tasks"]).startswith(str(copy / "code")), alone["tasks"]  # the model's code, not the project's
    _same(alone["rows"], expected)

    code = sorted(p.relative_to(copy / "code").as_posix() for p in (copy / "code").rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)
    assert len(code) <= 30, code
    for part in ("tasks/ingest/", "tasks/fetch/", "tasks/providers/", "tasks/prices/", "tasks/publishing/",
                 "tasks/ranking/", "tasks/telemetry/"):
        assert not [f for f in code if f.startswith(part)], (part, code)
    # SQL: the reference schema and FLOPs macros an in-memory database needs, the reference loads, the contract's
    # normaliser (the ingest's own) and the feature SQL (nothing of sql/ddl/, no ingest, publishing or ranking SQL)
    assert [f for f in code if f.startswith("sql/")] == [
        "sql/common/load_gpu_aliases.sql", "sql/common/load_gpu_specs.sql", "sql/contract/cells.sql",
        "sql/contract/flops_macros.sql", "sql/contract/normalised_runs.sql", "sql/contract/reference_schema.sql",
        "sql/contract/rules.sql", "sql/contract/spellings_to_look_up.sql", "sql/features/build_features.sql"]
