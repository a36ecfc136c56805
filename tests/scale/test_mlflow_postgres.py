"""The shared model registry: a real `mlflow server` whose backend store is PostgreSQL and whose artifacts live in
a shared artifact root, with MLFLOW_TRACKING_URI pointing at it. Training, promotion, champion loading,
`gpucost predict`, the published `model_versions` table and the UI work as on the embedded SQLite store, and
two trainings at once leave a consistent registry."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import polars as pl
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from tasks.model.tracking import CHAMPION, EXPERIMENT, REGISTERED_MODEL
from tasks.settings import PROJECT_ROOT
from tests import configured
from tests.conftest import FIXTURES
from tests.ranking.conftest import AWS_SAMPLE, ingest
from tests.scale.processes import log_tail

PREDICT_INPUT = FIXTURES / "model_predict_input.csv"


def registry_rows(postgres, database: str, sql_file: str) -> list[tuple]:
    """Read MLflow's own tables in PostgreSQL: proof that the server stores the registry there."""
    with postgres.connect(database) as pg:
        return pg.execute((Path(__file__).parent / "sql" / sql_file).read_text(encoding="utf-8")).fetchall()


def test_train_promote_predict_publish_against_the_server(
    mlflow_server, postgres, training_features, baseline_config_dir, con, gpucost_home, monkeypatch, tmp_path
) -> None:
    from tasks.config_files import load_config
    from tasks.model.predict import load_champion
    from tasks.model.training import train_and_register
    from tasks.publishing.night import publish_night

    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.uri)
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(baseline_config_dir))

    # train: the first registered version of a fresh registry becomes champion
    outcome = train_and_register(training_features, load_config("models"), configured.resources(),
                                 configured.contract())
    assert (outcome.version, outcome.alias) == ("1", CHAMPION)
    # ... and PostgreSQL holds it (MLflow's own tables), the artifact root holds the model files
    assert registry_rows(postgres, mlflow_server.database, "champion_alias.sql") == [(REGISTERED_MODEL, CHAMPION, 1)]
    assert list(mlflow_server.artifacts.rglob("MLmodel")), "the model files are not under --artifacts-destination"
    assert not (gpucost_home / "mlflow").exists(), "nothing may be written to the local store"

    # the champion loads through the server (artifacts proxied by it) and `gpucost predict` uses it
    champion = load_champion(configured.resources().tracking_uri, configured.contract())
    assert champion is not None and champion.version == "1"
    from gpucost.cli import app

    out = tmp_path / "predicted.csv"
    result = CliRunner().invoke(app, ["predict", str(PREDICT_INPUT), "-o", str(out)])
    assert result.exit_code == 0, result.output
    predicted = pl.read_csv(out)
    assert predicted.height == 10  # the fixture's 10 rows, every one kept
    scored = predicted.filter(pl.col("unscored_reason").is_null())
    assert scored.height > 0 and scored["model_version"].cast(pl.String).unique().to_list() == ["1"]
    assert (scored["predicted_tokens_per_sec_per_gpu"] > 0).all()

    # publish: the ranking uses the server's champion, model_versions lists the server's registry
    ingest(con, AWS_SAMPLE, "aws")
    night = date(2026, 1, 6)
    outcome = publish_night(con, champion, night, datetime(2026, 1, 6, 2, tzinfo=UTC), configured.resources(),
                            **configured.night())
    with duckdb.connect(str(outcome.published.path), read_only=True) as published:
        versions = published.sql("select version, aliases, is_champion from model_versions").fetchall()
        used = published.sql("select distinct model_version from gpu_cost_ranking where model_version is not null"
                             ).fetchall()
    assert versions == [("1", CHAMPION, True)]
    assert used == [("1",)]

    # the MLflow UI (served by the same process) and its REST API answer
    with urllib.request.urlopen(mlflow_server.uri + "/", timeout=10) as page:
        assert page.status == 200 and b"<html" in page.read().lower()
    url = f"{mlflow_server.uri}/api/2.0/mlflow/registered-models/get?name={REGISTERED_MODEL}"
    with urllib.request.urlopen(url, timeout=10) as response:
        model = json.load(response)["registered_model"]
    assert model["aliases"] == [{"alias": CHAMPION, "version": "1"}]


def _running_parent_runs(client: MlflowClient) -> int:
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        return 0
    runs = client.search_runs([experiment.experiment_id], filter_string="attributes.status = 'RUNNING'")
    return sum(1 for run in runs if "mlflow.parentRunId" not in run.data.tags)


def test_two_trainings_at_once_leave_a_consistent_registry(
    mlflow_server, postgres, training_features, baseline_config_dir, tmp_path
) -> None:
    """A second team member starts `gpucost train` while the first one's is still running (both against the same
    server): every version is registered once, numbered without gaps, exactly one holds `champion`, each carries
    the decision its training took, and neither training's runs are marked FAILED by the other."""
    client = MlflowClient(tracking_uri=mlflow_server.uri, registry_uri=mlflow_server.uri)
    # a fresh registry (no champion yet): both trainings may decide to promote, the race this test is about
    if client.search_registered_models(f"name = '{REGISTERED_MODEL}'"):
        client.delete_registered_model(REGISTERED_MODEL)
    before: set[int] = set()
    features = tmp_path / "features.parquet"
    training_features.write_parquet(features)
    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_server.uri, "GPUCOST_CONFIG_DIR": str(baseline_config_dir),
           "GPUCOST_HOME": str(tmp_path / "home")}
    # the second with another seed: a training identical to one already registered registers no version
    reseeded = shutil.copytree(baseline_config_dir, tmp_path / "reseeded-config")
    models = reseeded / "models.toml"
    models.write_text(re.sub(r"(?m)^seed = \d+", "seed = 1", models.read_text(encoding="utf-8")), encoding="utf-8")
    envs = [env, {**env, "GPUCOST_CONFIG_DIR": str(reseeded)}]
    go = [tmp_path / "go-first", tmp_path / "go-second"]
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    processes = []
    try:
        for log, signal, process_env in zip(logs, go, envs, strict=True):
            with open(log, "wb") as out:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "tests.scale.train_process", str(features), str(signal)],
                    env=process_env, cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT))
        go[0].touch()
        # the second training starts once the first one's run is open (RUNNING) on the server
        deadline = time.monotonic() + 240
        while _running_parent_runs(client) == 0:
            assert processes[0].poll() is None, f"the first training ended early:\n{log_tail(logs[0])}"
            assert time.monotonic() < deadline, "the first training never opened its run"
            time.sleep(0.1)
        go[1].touch()
        for process, log in zip(processes, logs, strict=True):
            assert process.wait(timeout=300) == 0, log_tail(log)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()

    reported = [log.read_text().strip().splitlines()[-1].split() for log in logs]  # "registered <version> <alias>"
    versions = client.search_model_versions(f"name = '{REGISTERED_MODEL}'")
    new = sorted(int(v.version) for v in versions if int(v.version) not in before)
    start = max(before, default=0)
    assert new == [start + 1, start + 2]            # two versions, numbered once each, no gap
    assert sorted(int(r[1]) for r in reported) == new
    holders = registry_rows(postgres, mlflow_server.database, "champion_alias.sql")
    assert len(holders) == 1                        # one champion, in PostgreSQL itself
    champion_version = str(holders[0][2])
    for version in versions:
        if int(version.version) in new:
            decision = version.tags.get("promotion_decision")
            # the version holding `champion` says it was promoted; the other one either was not, or was promoted
            # and then superseded by the other training's promotion (the second trains with another seed, a
            # refit the promotion rule may promote): its tag records the decision it took, not the alias now
            if version.version == champion_version:
                assert decision == CHAMPION, version.tags
            else:
                assert decision in (CHAMPION, "challenger"), version.tags
    # no run of either training was taken for an interrupted one
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    assert {run.info.status for run in runs} == {"FINISHED"}, [(r.info.run_name, r.info.status) for r in runs]
    assert not [r.info.run_name for r in runs if "failure_reason" in r.data.tags]
    assert not [v.version for v in versions if "status_note" in v.tags]
