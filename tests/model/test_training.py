"""Training against a real MLflow SQLite store under the per-test GPUCOST_HOME, on the bundled telemetry."""

from __future__ import annotations

import shutil
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import polars as pl
import pytest
from mlflow.tracking import MlflowClient

from tasks import config_files
from tasks.config_files import load_config
from tasks.model.tracking import CHAMPION, EXPERIMENT, REGISTERED_MODEL, TAG_SPEC, connect_tracking
from tasks.model.training import NotEnoughTelemetryError, train_and_register
from tasks.settings import PROJECT_ROOT
from tests import configured


def test_first_training_registers_a_loadable_champion(in_trained_home: tuple[Path, object],
                                                      training_features: pl.DataFrame) -> None:
    home, outcome = in_trained_home
    assert (outcome.version, outcome.alias) == ("1", CHAMPION)
    client = connect_tracking(configured.resources().tracking_uri, configured.resources().home).client
    champion = client.get_model_version_by_alias(REGISTERED_MODEL, CHAMPION)
    assert str(champion.version) == "1"
    assert champion.tags[TAG_SPEC]  # what makes it re-scorable
    experiment = client.get_experiment_by_name(EXPERIMENT)
    # stored relative to GPUCOST_HOME (tasks/model/home_artifacts.py); the files are in this home
    assert experiment.artifact_location == "gpucost-home:/mlflow/artifacts"
    assert (home / "mlflow" / "artifacts" / "models").is_dir()

    model = mlflow.pyfunc.load_model(f"models:/{REGISTERED_MODEL}@{CHAMPION}")
    # training rows are contract rows too (their GPU ids, precision families and workloads are contract values)
    predicted = model.predict(training_features.head(5).to_pandas())
    assert list(predicted.columns) == ["predicted_tokens_per_sec_per_gpu", "predicted_low", "predicted_high",
                                       "extrapolation", "unscored_reason"]
    assert predicted["unscored_reason"].isna().all()
    # training rows: every GPU, precision family and framework was seen, no cluster beyond the largest
    assert set(predicted["extrapolation"]) <= {"", "moe_little_data"}
    values = predicted.drop(columns=["extrapolation", "unscored_reason"]).to_numpy(dtype="float64")
    assert np.isfinite(values).all()
    assert (predicted["predicted_low"] <= predicted["predicted_tokens_per_sec_per_gpu"]).all()
    assert (predicted["predicted_tokens_per_sec_per_gpu"] <= predicted["predicted_high"]).all()
    assert {i.name for i in model.metadata.get_input_schema().inputs} >= {"gpu", "precision", "num_gpus"}
    assert "physics_bound_tokens_per_sec_per_gpu" not in {i.name for i in model.metadata.get_input_schema().inputs}


def test_each_candidate_run_has_fold_metrics_dataset_plot_and_importance(in_trained_home: tuple[Path, object]) -> None:
    _, outcome = in_trained_home
    client = connect_tracking(configured.resources().tracking_uri, configured.resources().home).client
    experiment = client.get_experiment_by_name(EXPERIMENT)
    children = client.search_runs([experiment.experiment_id],
                                  filter_string=f"tags.mlflow.parentRunId = '{outcome.run_id}'")
    # the small config has 3 candidates
    assert sorted(r.info.run_name for r in children) == ["lasso", "physics_baseline", "structured_step_time"]
    run = next(r for r in children if r.info.run_name == "lasso")
    # the bundled telemetry has 3 GPU types with telemetry (A100-40GB, A100-80GB, H100-SXM): 3 folds, steps 0..2
    history = client.get_metric_history(run.info.run_id, "cv_gpu/fold_median_ape")
    assert sorted(m.step for m in history) == [0, 1, 2]
    for name in ("cv_gpu/median_ape", "cv_source_group/median_ape", "cv_gpu/r2", "cv_source_group/rmse", "score"):
        assert name in run.data.metrics
    assert "importance/learning_rate" in run.data.metrics  # reported even though the telemetry has none
    assert run.data.metrics["importance/learning_rate"] == 0.0  # an all-missing column cannot matter
    assert run.inputs.dataset_inputs[0].dataset.name == "features.training_runs"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"residuals.png", "permutation_importance.json", "features.json", "candidate_spec.json"} <= artifacts


def test_best_candidate_beats_the_physics_baseline_on_the_same_folds(in_trained_home: tuple[Path, object]) -> None:
    _, outcome = in_trained_home
    # the selection rule: the champion is no worse than the constant-MFU baseline on any grouping
    for grouping in ("gpu", "source_group", "precision"):
        assert outcome.median_ape[outcome.best][grouping] <= outcome.median_ape["physics_baseline"][grouping]


def test_interval_coverage_is_reported_and_sane(in_trained_home: tuple[Path, object]) -> None:
    _, outcome = in_trained_home
    run = connect_tracking(configured.resources().tracking_uri,
                           configured.resources().home).client.get_run(outcome.run_id)
    for grouping in ("gpu", "source_group"):
        coverage = run.data.metrics[f"interval_coverage/{grouping}"]
        assert coverage == outcome.coverage[grouping]
        # an 80% interval on held-out groups: far from 0% or 100% (3 GPU folds make this one noisy)
        assert 0.6 <= coverage <= 0.95
    intervals = outcome.intervals
    assert intervals.unseen_low <= intervals.seen_low < 0 < intervals.seen_high <= intervals.unseen_high


def test_another_candidate_set_with_the_same_winner_registers_nothing(trained_home: tuple[Path, object],
                                                                       training_features: pl.DataFrame, use_config,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    from tests.model.conftest import make_config_dir

    # the first training: the small set on these rows in a fresh home, which trained_home is (a copy: this test
    # trains again; its artifacts are stored relative to the home)
    home, first = trained_home
    monkeypatch.setenv("GPUCOST_HOME", str(shutil.copytree(home, tmp_path / "home")))
    # the small set without its lasso: on this file the structured model wins both sets (it beats the
    # constant-MFU baseline on every grouping): same rows, same winning spec, same settings -> the same model
    without_lasso = """
[[candidates]]
name = "physics_baseline"
kind = "constant_mfu"

[[candidates]]
name = "structured_step_time"
kind = "structured_step_time"
"""
    use_config(make_config_dir(tmp_path, without_lasso))
    again = train_and_register(training_features, load_config("models"), configured.resources(), configured.contract())
    assert first.best == again.best == "structured_step_time"
    assert again.scores["structured_step_time"] == pytest.approx(first.scores["structured_step_time"], rel=1e-12)
    assert (again.registered, again.version, again.alias) == (False, "1", "champion")
    client = MlflowClient(configured.resources().tracking_uri)
    assert [str(v.version) for v in client.search_model_versions(f"name = '{REGISTERED_MODEL}'")] == ["1"]
    assert str(client.get_model_version_by_alias(REGISTERED_MODEL, "champion").version) == "1"


def test_a_gpu_added_to_the_reference_files_reaches_the_champion(training_features: pl.DataFrame,
                                                                 baseline_config_dir: Path, use_config,
                                                                 tmp_path: Path) -> None:
    """Same rows, same spec, but gpu_specs.csv / gpu_aliases.csv gained a GPU (no training row changes): the model
    carries its reference files, so the refit is registered and promoted, and only it knows the new GPU."""
    use_config(baseline_config_dir)
    first = train_and_register(training_features, load_config("models"), configured.resources(), configured.contract())
    config = shutil.copytree(baseline_config_dir, tmp_path / "config")
    specs, aliases = tmp_path / "gpu_specs.csv", tmp_path / "gpu_aliases.csv"
    h100 = pl.read_csv(PROJECT_ROOT / "data/reference/gpu_specs.csv", infer_schema=False)
    pl.concat([h100, h100.filter(pl.col("gpu") == "H100-SXM").with_columns(gpu=pl.lit("X100"))]).write_csv(specs)
    known = pl.read_csv(PROJECT_ROOT / "data/reference/gpu_aliases.csv", infer_schema=False)
    pl.concat([known, pl.DataFrame({"alias": ["X100"], "gpu": ["X100"], "note": ["test"]})]).write_csv(aliases)
    settings = (config / "settings.toml").read_text(encoding="utf-8")
    settings = settings.replace('gpu_specs = "data/reference/gpu_specs.csv"', f'gpu_specs = "{specs}"')
    settings = settings.replace('gpu_aliases = "data/reference/gpu_aliases.csv"', f'gpu_aliases = "{aliases}"')
    (config / "settings.toml").write_text(settings, encoding="utf-8")
    use_config(config)
    refit = train_and_register(training_features, load_config("models"), configured.resources(), configured.contract())
    assert (first.version, refit.version, refit.alias) == ("1", "2", "champion")
    assert refit.reason.startswith("promoted as a refit of the champion's own spec with changed reference data")

    rows = pd.DataFrame({"gpu": ["X100", "H100-SXM"], "num_gpus": [8, 8], "params_b": [7.0, 7.0],
                         "seq_len": [4096, 4096], "precision": ["bf16", "bf16"]})
    old = mlflow.pyfunc.load_model(f"models:/{REGISTERED_MODEL}/1").predict(rows)
    new = mlflow.pyfunc.load_model(f"models:/{REGISTERED_MODEL}@{CHAMPION}").predict(rows)
    assert old["unscored_reason"][0] == "unknown GPU 'X100' (not in gpu_aliases.csv)"
    assert new["unscored_reason"].isna().all()
    # the constant-MFU baseline on an H100's specs under another name: the same point prediction (an unseen GPU)
    assert new["predicted_tokens_per_sec_per_gpu"][0] == pytest.approx(new["predicted_tokens_per_sec_per_gpu"][1],
                                                                       rel=1e-12)
    assert new["extrapolation"][0].startswith("unseen_gpu")


def test_better_candidate_set_replaces_a_baseline_champion(all_training_features: pl.DataFrame,
                                                           small_config_dir: Path, baseline_config_dir: Path,
                                                           use_config) -> None:
    # Both bundled files: on the first file alone the structured model loses the leave-one-source-out grouping to
    # the baseline (so the selection rule rightly keeps the baseline); on both it beats it on every grouping.
    use_config(baseline_config_dir)
    first = train_and_register(all_training_features, load_config("models"), configured.resources(),
                               configured.contract())
    use_config(small_config_dir)
    better = train_and_register(all_training_features, load_config("models"), configured.resources(),
                                configured.contract())
    assert (first.alias, better.alias) == ("champion", "champion")
    assert better.champion_rescored == pytest.approx(first.scores["physics_baseline"], rel=1e-12)
    assert better.reason.startswith("promoted")


def test_too_little_telemetry_is_a_clear_error(training_features: pl.DataFrame, small_config_dir: Path,
                                               use_config) -> None:
    use_config(small_config_dir)
    with pytest.raises(NotEnoughTelemetryError, match="usable training rows"):
        train_and_register(training_features.head(5), load_config("models"), configured.resources(),
                           configured.contract())


def test_full_candidate_set_champion_beats_baseline(training_features: pl.DataFrame) -> None:
    """The shipped config/models.toml (every candidate): the only test that trains the full set."""
    outcome = train_and_register(training_features, config_files.models(), configured.resources(),
                                 configured.contract())
    assert set(outcome.scores) == {c["name"] for c in load_config("models")["candidates"]}
    assert outcome.alias == "champion"
    # the champion is no worse than the constant-MFU baseline on ANY grouping (the selection rule)
    for grouping in ("gpu", "source_group", "precision"):
        assert outcome.median_ape[outcome.best][grouping] <= outcome.median_ape["physics_baseline"][grouping]
