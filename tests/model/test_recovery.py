"""What a bad night leaves behind: a champion whose files are gone (fall back, say so), a killed training's
RUNNING runs and alias-less version (cleaned up by the next training), an unusable MLflow store (`gpucost train`
fails in one line)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from mlflow.entities.model_registry import ModelVersion, ModelVersionTag

from tasks import config_files
from tasks.model.predict import fallback_order
from tasks.settings import PROJECT_ROOT
from tests import configured


def _version(number: int, tags: dict[str, str]) -> ModelVersion:
    return ModelVersion(name="token-efficiency", version=str(number), creation_timestamp=number,
                        tags=[ModelVersionTag(k, v) for k, v in tags.items()])


def test_fallback_prefers_former_champions_newest_first_and_never_a_later_version() -> None:
    versions = [
        _version(1, {"promotion_decision": "champion"}),     # champion at registration (before the tag existed)
        _version(2, {"was_champion": "true", "promotion_decision": "champion"}),
        _version(3, {"promotion_decision": "challenger"}),   # never champion, but newer than 1 and 2
        _version(4, {}),                                      # the broken champion itself
        _version(5, {"was_champion": "true"}),               # registered after it: not a fallback
    ]
    # former champions newest first (2, 1), then the rest newest first (3); 4 is the broken one, 5 is later
    assert [v.version for v in fallback_order(versions, "4")] == ["2", "1", "3"]
    assert fallback_order(versions, "1") == []


def test_next_training_marks_a_killed_trainings_runs_failed_and_its_version_unpromoted(
    training_features: pl.DataFrame, small_config_dir: Path, use_config: Callable[[Path], None], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tasks.model.registry as registry
    import tasks.model.training as training
    from tasks.model.tracking import REGISTERED_MODEL, TAG_STATUS_NOTE, connect_tracking

    use_config(small_config_dir)
    # the debris of a training killed after registering its version: a parent run and a nested candidate run,
    # both RUNNING, and version 1 with no alias and no tags
    tracking = connect_tracking(configured.resources().tracking_uri, configured.resources().home)
    client = tracking.client
    parent = client.create_run(tracking.experiment_id, run_name="train-killed")
    child = client.create_run(tracking.experiment_id, run_name="lasso",
                              tags={"mlflow.parentRunId": parent.info.run_id})
    client.create_registered_model(REGISTERED_MODEL)
    (tmp_path / "model").mkdir()
    orphan = client.create_model_version(REGISTERED_MODEL, source=str(tmp_path / "model"), run_id=parent.info.run_id)
    # the next training is a later process: everything above is older than it
    monkeypatch.setattr(registry, "PROCESS_STARTED_MS", int(time.time() * 1000) + 1)

    outcome = training.train_and_register(training_features, config_files.models(), configured.resources(),
                                          configured.contract())

    for run_id in (parent.info.run_id, child.info.run_id):
        run = client.get_run(run_id)
        assert run.info.status == "FAILED"
        assert run.data.tags["failure_reason"].startswith("interrupted")
    assert client.get_model_version(REGISTERED_MODEL, orphan.version).tags[TAG_STATUS_NOTE] == (
        "registered by an interrupted training; never promoted")
    # the new training itself is untouched: finished, its version (2) champion with no status note
    assert client.get_run(outcome.run_id).info.status == "FINISHED"
    assert (outcome.version, outcome.alias) == ("2", "champion")
    assert TAG_STATUS_NOTE not in client.get_model_version(REGISTERED_MODEL, "2").tags
    # a second recovery finds nothing left to fix
    assert registry.recover_interrupted_training(connect_tracking(configured.resources().tracking_uri,
                                                                  configured.resources().home)) == []


def test_gpucost_train_with_an_unusable_mlflow_store_fails_in_one_line(gpucost_home: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the MLflow store's folder should be")
    uri = f"sqlite:///{blocker}/mlflow/mlflow.db"
    result = subprocess.run([sys.executable, "-m", "gpucost.cli", "train"], capture_output=True, text=True,
                            timeout=120, cwd=PROJECT_ROOT,
                            env={**os.environ, "GPUCOST_HOME": str(gpucost_home), "MLFLOW_TRACKING_URI": uri})
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and uri in errors[0] and "Not a directory" in errors[0], result.stderr
