"""MLflow by its conventions: a training on unchanged data registers nothing (its run says why), and a copied
GPUCOST_HOME is self-contained (artifact locations relative to the home; the model carries its code and
reference files, so a fresh process loads it from the registry alone)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pytest
from mlflow.tracking import MlflowClient

from tasks.model.home_artifacts import resolve_home_uri
from tasks.model.tracking import REGISTERED_MODEL
from tasks.settings import PROJECT_ROOT
from tests import configured
from tests.conftest import FIXTURES

PREDICT_INPUT = FIXTURES / "model_predict_input.csv"


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folder`: (size, modification time in ns)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def store(home: Path) -> MlflowClient:
    uri = f"sqlite:///{home / 'mlflow' / 'mlflow.db'}"
    return MlflowClient(tracking_uri=uri, registry_uri=uri)


@pytest.fixture(scope="module")
def retrained_copy(trained_home: tuple[Path, object], training_features: pl.DataFrame, small_config_dir: Path,
                   tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict, object]:
    """The trained home copied to `original` (a user's home), that copied to `copy`, and the same training
    (same rows, same candidates) run again with GPUCOST_HOME = the copy."""
    from tasks.config_files import load_config
    from tasks.model.training import train_and_register

    root = tmp_path_factory.mktemp("moved-home")
    original, copy = root / "original", root / "copy"
    shutil.copytree(trained_home[0], original)
    shutil.copytree(original, copy)
    before = snapshot(original)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GPUCOST_HOME", str(copy))
        env.setenv("GPUCOST_CONFIG_DIR", str(small_config_dir))
        env.delenv("MLFLOW_TRACKING_URI", raising=False)
        outcome = train_and_register(training_features, load_config("models"), configured.resources(),
                                     configured.contract())
    return original, copy, before, outcome


def test_training_again_on_unchanged_data_registers_no_version(retrained_copy) -> None:
    _, copy, _, outcome = retrained_copy
    client = store(copy)
    versions = client.search_model_versions(f"name = '{REGISTERED_MODEL}'")
    assert [str(v.version) for v in versions] == ["1"]  # the first training's version, nothing new
    assert (outcome.registered, outcome.version, outcome.alias) == (False, "1", "champion")
    # the second training is still logged, and says why it registered nothing
    run = client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED"
    tags = run.data.tags
    version = client.get_model_version(REGISTERED_MODEL, "1")
    assert tags["promotion_decision"] == "unchanged"
    assert tags["registered_version"] == "none" and tags["identical_to_version"] == "1"
    assert tags["training_fingerprint"] == version.tags["training_fingerprint"]
    assert len(tags["training_fingerprint"]) == 64  # a sha256
    assert tags["not_registered_reason"].startswith(
        f"identical to v1 (champion): same training rows (data digest {version.tags['data_digest'][:12]}), "
        f"same best spec {version.tags['candidate']} and settings")
    assert client.get_model_version_by_alias(REGISTERED_MODEL, "champion").version in ("1", 1)


def test_copied_home_is_self_contained(retrained_copy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original, copy, before, outcome = retrained_copy
    # the training in the copy wrote nothing into the original; its candidates' plots went to the copy
    assert snapshot(original) == before
    experiment = store(copy).get_experiment_by_name("token-efficiency")
    assert experiment.artifact_location == "gpucost-home:/mlflow/artifacts"
    children = store(copy).search_runs([experiment.experiment_id],
                                       filter_string=f"tags.mlflow.parentRunId = '{outcome.run_id}'")
    assert len(children) == 3
    for child in children:
        assert (copy / "mlflow" / "artifacts" / child.info.run_id / "artifacts" / "residuals.png").is_file()
        assert not (original / "mlflow" / "artifacts" / child.info.run_id).exists()

    # with the original gone, the champion loads from the copy (its registry, its artifacts)
    shutil.rmtree(original)
    from tasks.model.predict import load_champion

    monkeypatch.setenv("GPUCOST_HOME", str(copy))
    champion = load_champion(configured.resources().tracking_uri, configured.contract())
    assert champion is not None and (champion.version, champion.is_fallback) == ("1", False)
    here = champion.predict(pl.read_csv(PREDICT_INPUT, infer_schema=False))
    assert here["unscored_reason"].null_count() == 6  # the fixture's 6 good rows

    # and the model carries what it runs: a fresh Python process that cannot import this checkout loads the
    # version's files (inside the copy) and predicts the same numbers with the code logged beside them
    model_dir = resolve_home_uri(store(copy).get_model_version_download_uri(REGISTERED_MODEL, "1"), copy)
    assert model_dir.is_relative_to(copy)
    script = f"""
import importlib.util, json, sys
sys.meta_path = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")]
sys.path = [p for p in sys.path if p not in ("", "{PROJECT_ROOT}")]
assert importlib.util.find_spec("tasks") is None, "the checkout is still importable"
import mlflow, pandas as pd
model = mlflow.pyfunc.load_model("{model_dir}")
out = model.predict(pd.read_csv("{PREDICT_INPUT}"))
print(json.dumps({{"tasks": sys.modules["tasks"].__file__, "predicted": out.to_dict(orient="list")}}))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "GPUCOST_CONFIG_DIR")}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    fresh = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(fresh["tasks"]) == model_dir / "code" / "tasks" / "__init__.py"  # the code_paths copy
    predicted = pd.DataFrame(fresh["predicted"])
    assert [None if pd.isna(v) else v for v in predicted["unscored_reason"]] == here["unscored_reason"].to_list()
    for name in ("predicted_tokens_per_sec_per_gpu", "predicted_low", "predicted_high"):
        assert predicted[name].tolist() == pytest.approx(here[name].fill_null(float("nan")).to_list(), nan_ok=True,
                                                         rel=1e-12)
