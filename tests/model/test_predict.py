"""Contract 2: load_champion, Champion.predict and `gpucost predict`, against a real trained MLflow store."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from tasks.model.predict import NoChampionError, load_champion, predict_file
from tests.conftest import FIXTURES

PREDICT_INPUT = FIXTURES / "model_predict_input.csv"
SEEN = ("seen-a100", "seen-h100")            # GPUs with telemetry in the bundled sample
UNSEEN = ("unseen-h200", "unseen-b200", "unseen-mi300x", "unseen-l4")  # specs, no telemetry


def test_no_store_means_no_champion_and_nothing_is_created(gpucost_home: Path) -> None:
    assert load_champion() is None
    assert not (gpucost_home / "mlflow").exists()


def test_predict_file_without_champion_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(NoChampionError, match="gpucost train"):
        predict_file(PREDICT_INPUT, tmp_path / "out.csv")
    from flows.cli import app

    result = CliRunner().invoke(app, ["predict", str(PREDICT_INPUT), "-o", str(tmp_path / "out.csv")])
    assert result.exit_code == 1
    assert "no `champion` version" in result.output
    assert not (tmp_path / "out.csv").exists()


def test_champion_predict_keeps_rows_and_adds_contract_columns(in_trained_home, training_features) -> None:
    champion = load_champion()
    assert champion is not None and champion.version == "1"
    rows = training_features.head(4)
    predicted = champion.predict(rows)
    assert predicted.columns == [*rows.columns, "predicted_tokens_per_sec_per_gpu", "predicted_low",
                                 "predicted_high", "extrapolation", "model_version"]
    assert predicted["run_id"].to_list() == rows["run_id"].to_list()
    assert predicted["model_version"].to_list() == ["1"] * 4
    assert predicted["predicted_tokens_per_sec_per_gpu"].is_finite().all()


def test_predict_file_scores_unseen_gpus_with_wider_intervals(in_trained_home, tmp_path: Path) -> None:
    del in_trained_home  # GPUCOST_HOME points at the trained store
    out = tmp_path / "predicted.parquet"
    result = predict_file(PREDICT_INPUT, out)
    written = pl.read_parquet(out)
    assert written.equals(result)
    source = pl.read_csv(PREDICT_INPUT, infer_schema=False)
    assert written.select(source.columns).equals(source)  # input rows and columns untouched, in order

    by_id = {row["run_id"]: row for row in written.iter_rows(named=True)}
    conformal = load_champion().model.conformal
    for run_id in SEEN + UNSEEN:
        row = by_id[run_id]
        assert row["unscored_reason"] is None and row["model_version"] == "1"
        low, mid, high = row["predicted_low"], row["predicted_tokens_per_sec_per_gpu"], row["predicted_high"]
        assert all(math.isfinite(v) and v > 0 for v in (low, mid, high)) and low < mid < high
        # the fixture names no framework: the pooled framework factor, flagged; H200/B200/MI300X/L4 are unseen
        flags = "unseen_framework" if run_id in SEEN else "unseen_gpu,unseen_framework"
        assert row["extrapolation"] == flags
        # relative width high/low = exp(2 x half-width) in log space, the half-width q x exp(b0 + b of each flag)
        # (no MFU clipping near MFU ~0.4)
        widening = conformal.widening()
        half = conformal.quantile * math.exp(conformal.log_scale) * math.prod(widening[f] for f in flags.split(","))
        assert high / low == pytest.approx(math.exp(2 * half), rel=1e-9)
    widest_seen = max(by_id[r]["predicted_high"] / by_id[r]["predicted_low"] for r in SEEN)
    narrowest_unseen = min(by_id[r]["predicted_high"] / by_id[r]["predicted_low"] for r in UNSEEN)
    assert narrowest_unseen > widest_seen


def test_throughput_in_the_input_is_ignored(in_trained_home, tmp_path: Path) -> None:
    rows = pl.read_csv(PREDICT_INPUT, infer_schema=False).head(1)  # seen-a100 with tokens_per_sec_per_gpu 999
    rows.write_csv(tmp_path / "with.csv")
    rows.drop("tokens_per_sec_per_gpu").write_csv(tmp_path / "without.csv")
    with_throughput = predict_file(tmp_path / "with.csv", tmp_path / "with_out.csv")
    without = predict_file(tmp_path / "without.csv", tmp_path / "without_out.csv")
    assert with_throughput["predicted_tokens_per_sec_per_gpu"].to_list() == \
        without["predicted_tokens_per_sec_per_gpu"].to_list()


def test_unscorable_rows_get_a_reason_not_a_crash(in_trained_home, tmp_path: Path) -> None:
    result = predict_file(PREDICT_INPUT, tmp_path / "out.csv")
    reasons = dict(zip(result["run_id"], result["unscored_reason"], strict=True))
    assert reasons["bad-gpu"] == "unknown GPU 'TPUv5' (not in gpu_aliases.csv)"
    assert reasons["bad-precision"] == "unknown precision 'int3'"
    assert reasons["no-fp8-peak"] == "no dense fp8 peak for A100-80GB in gpu_specs.csv"  # A100 has no fp8 column
    assert reasons["no-params"] == "missing params_b"
    unscored = result.filter(pl.col("unscored_reason").is_not_null())
    assert unscored.height == 4
    assert unscored["predicted_tokens_per_sec_per_gpu"].null_count() == 4
    assert unscored["model_version"].null_count() == 4
    written = pl.read_csv(tmp_path / "out.csv", infer_schema=False)
    assert written.height == 10 and "unscored_reason" in written.columns
