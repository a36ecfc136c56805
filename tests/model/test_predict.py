"""Contract 2: load_champion, Champion.predict and `gpucost predict`, against a real trained MLflow store."""

from __future__ import annotations

import math
from pathlib import Path

import mlflow
import pandas as pd
import polars as pl
import pytest
from mlflow.exceptions import MlflowException
from typer.testing import CliRunner

from tasks.contract.schema import INPUT_KINDS
from tasks.model.predict import NoChampionError, load_champion, predict_file
from tasks.model.tracking import connect_tracking
from tests import configured
from tests.conftest import FIXTURES

PREDICT_INPUT = FIXTURES / "model_predict_input.csv"
SEEN = ("seen-a100", "seen-h100")            # GPUs with telemetry in the bundled sample
UNSEEN = ("unseen-h200", "unseen-b200", "unseen-mi300x", "unseen-l4")  # specs, no telemetry


def test_no_store_means_no_champion_and_nothing_is_created(gpucost_home: Path) -> None:
    assert load_champion(configured.resources().tracking_uri, configured.contract()) is None
    assert not (gpucost_home / "mlflow").exists()


def test_predict_file_without_champion_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(NoChampionError, match="gpucost train"):
        predict_file(PREDICT_INPUT, tmp_path / "out.csv", **configured.predict_options())
    from gpucost.cli import app

    result = CliRunner().invoke(app, ["predict", str(PREDICT_INPUT), "-o", str(tmp_path / "out.csv")])
    assert result.exit_code == 1
    assert "no `champion` version" in result.output
    assert not (tmp_path / "out.csv").exists()


# The fixture: a header of 13 columns and 10 rows (lines 2-11), no quotes; each fault is appended as line 12.
UNREADABLE = {
    "empty file": (b"", "empty CSV file: no header line"),
    "a short line": (b"x,H100,8\n", "line 12: 3 fields, the header has 13"),
    "a long line": (b"x" + b",1" * 13 + b"\n", "line 12: 14 fields, the header has 13"),
    "an unclosed quote": (b'"x,H100,8\n', "line 12: 1 fields, the header has 13"),
    "not UTF-8": (b"x\xff" + b"," * 12 + b"\n", "unreadable file: UnicodeDecodeError"),
}


@pytest.mark.parametrize("fault", list(UNREADABLE))
def test_an_unreadable_input_is_one_line_naming_the_file_and_line(fault: str, tmp_path: Path) -> None:
    """Read as the telemetry ingest reads a file, before any model is loaded (no champion here): exit 2, one
    line, no traceback, no output. Before, polars' NoDataError / ComputeError came out as a traceback and a short
    line was scored with its missing cells as nulls."""
    from gpucost.cli import app

    appended, reason = UNREADABLE[fault]
    path = tmp_path / "rows.csv"
    path.write_bytes(b"" if fault == "empty file" else PREDICT_INPUT.read_bytes() + appended)
    result = CliRunner().invoke(app, ["predict", str(path), "-o", str(tmp_path / "out.csv")])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {path}: {reason}") and result.output.count("\n") == 1, result.output
    assert not (tmp_path / "out.csv").exists()


def test_a_semicolon_separated_input_says_so(tmp_path: Path) -> None:
    from gpucost.cli import app

    path = tmp_path / "rows.csv"
    pl.read_csv(PREDICT_INPUT, infer_schema=False).write_csv(path, separator=";")
    result = CliRunner().invoke(app, ["predict", str(path), "-o", str(tmp_path / "out.csv")])
    assert result.exit_code == 2 and result.output.startswith(f"error: {path}: missing required column(s) gpu, ")
    assert "the file looks separated by ';', and CSV is read as comma-separated)" in result.output


def test_a_damaged_parquet_input_is_one_line(tmp_path: Path) -> None:
    from gpucost.cli import app

    whole, path = tmp_path / "whole.parquet", tmp_path / "rows.parquet"
    pl.read_csv(PREDICT_INPUT, infer_schema=False).write_parquet(whole)
    path.write_bytes(whole.read_bytes()[:-20])  # its footer cut off, as by an interrupted copy
    result = CliRunner().invoke(app, ["predict", str(path), "-o", str(tmp_path / "out.csv")])
    assert result.exit_code == 2 and result.output.startswith(f"error: {path}: unreadable Parquet file: ")
    assert result.output.count("\n") == 1, result.output


def test_champion_predict_keeps_rows_and_adds_contract_columns(in_trained_home, training_features) -> None:
    champion = load_champion(configured.resources().tracking_uri, configured.contract())
    assert champion is not None and champion.version == "1"
    rows = training_features.head(4)  # feature rows carry the contract's columns: they are contract rows too
    predicted = champion.predict(rows)
    assert predicted.columns == [*rows.columns, "predicted_tokens_per_sec_per_gpu", "predicted_low",
                                 "predicted_high", "extrapolation", "unscored_reason", "model_version"]
    assert predicted["run_id"].to_list() == rows["run_id"].to_list()
    assert predicted["model_version"].to_list() == ["1"] * 4
    assert predicted["unscored_reason"].null_count() == 4
    assert predicted["predicted_tokens_per_sec_per_gpu"].is_finite().all()


def test_registered_model_takes_contract_rows_like_gpucost_predict(in_trained_home, tmp_path: Path) -> None:
    """`mlflow.pyfunc.load_model("models:/token-efficiency@champion").predict(df)` on the README's predict
    input, read by pandas (numbers, a boolean column, an all-empty model_name), gives what `gpucost predict`
    writes for the same rows read as text."""
    from gpucost.cli import app

    result = CliRunner().invoke(app, ["predict", str(PREDICT_INPUT), "-o", str(tmp_path / "out.csv")])
    assert result.exit_code == 0, result.output
    cli = pl.read_csv(tmp_path / "out.csv", infer_schema=False)

    mlflow.set_tracking_uri(connect_tracking(configured.resources().tracking_uri, create_experiment=False).uri)
    model = mlflow.pyfunc.load_model("models:/token-efficiency@champion")
    predicted = model.predict(pd.read_csv(PREDICT_INPUT))
    assert list(predicted.columns) == ["predicted_tokens_per_sec_per_gpu", "predicted_low", "predicted_high",
                                       "extrapolation", "unscored_reason"]
    assert len(predicted) == 10  # one row out per row in
    for name in ("predicted_tokens_per_sec_per_gpu", "predicted_low", "predicted_high"):
        for ours, theirs in zip(predicted[name], cli[name], strict=True):
            if theirs is None:
                assert math.isnan(ours)
            else:
                assert ours == pytest.approx(float(theirs), rel=1e-12)
    assert [None if pd.isna(v) else v for v in predicted["unscored_reason"]] == cli["unscored_reason"].to_list()
    # the fixture's 6 good rows are scored, its 4 broken ones (unknown GPU and precision, no fp8 peak on an
    # A100, no params_b) are not
    assert predicted["unscored_reason"].isna().tolist() == [True] * 6 + [False] * 4
    # no machine columns in the input: each row's GPU system defaults (gpu_specs.csv) are assumed and said
    machine = ["machine_defaulted[scale_up_domain_gpus=8; scale_out_gbps_per_gpu=" + gbps + "]"
               for gbps in ("200", "400", "400", "400", "400")] + [
                   "machine_defaulted[scale_up_domain_gpus=1; scale_out_gbps_per_gpu=100]"]
    assert predicted["extrapolation"].tolist()[:6] == [
        f"{flags},{note}" for flags, note in zip(["unseen_framework"] * 2 + ["unseen_gpu,unseen_framework"] * 4,
                                                  machine, strict=True)]

    # the signature: the contract's columns without throughput, the five a prediction needs required
    inputs = model.metadata.get_input_schema().inputs
    assert [c.name for c in inputs] == [c for c in INPUT_KINDS if c not in
                                        ("tokens_per_sec_per_gpu", "tokens_processed", "wall_seconds", "mfu")]
    assert {c.name for c in inputs if c.required} == {"gpu", "num_gpus", "params_b", "seq_len", "precision"}
    assert model.metadata.saved_input_example_info is not None
    with pytest.raises(MlflowException, match="params_b"):
        model.predict(pd.read_csv(PREDICT_INPUT).drop(columns="params_b"))


def test_predict_file_scores_unseen_gpus_with_wider_intervals(in_trained_home, tmp_path: Path) -> None:
    del in_trained_home  # GPUCOST_HOME points at the trained store
    out = tmp_path / "predicted.parquet"
    result = predict_file(PREDICT_INPUT, out, **configured.predict_options())
    written = pl.read_parquet(out)
    assert written.equals(result)
    source = pl.read_csv(PREDICT_INPUT, infer_schema=False)
    assert written.select(source.columns).equals(source)  # input rows and columns untouched, in order

    by_id = {row["run_id"]: row for row in written.iter_rows(named=True)}
    conformal = load_champion(configured.resources().tracking_uri, configured.contract()).model.conformal
    for run_id in SEEN + UNSEEN:
        row = by_id[run_id]
        assert row["unscored_reason"] is None and row["model_version"] == "1"
        low, mid, high = row["predicted_low"], row["predicted_tokens_per_sec_per_gpu"], row["predicted_high"]
        assert all(math.isfinite(v) and v > 0 for v in (low, mid, high)) and low < mid < high
        # the fixture names no framework: the pooled framework factor, flagged; H200/B200/MI300X/L4 are unseen
        flags = "unseen_framework" if run_id in SEEN else "unseen_gpu,unseen_framework"
        # ... and the machine is the GPU system's default, said after the flags (it does not widen the interval)
        assert row["extrapolation"].startswith(flags + ",machine_defaulted[scale_up_domain_gpus=")
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
    with_throughput = predict_file(tmp_path / "with.csv", tmp_path / "with_out.csv", **configured.predict_options())
    without = predict_file(tmp_path / "without.csv", tmp_path / "without_out.csv", **configured.predict_options())
    assert with_throughput["predicted_tokens_per_sec_per_gpu"].to_list() == \
        without["predicted_tokens_per_sec_per_gpu"].to_list()


def test_json_lines_input_predicts_as_the_same_rows_in_csv(in_trained_home, tmp_path: Path) -> None:
    """JSON Lines, which the telemetry ingest reads, is read by predict the same way (values as text)."""
    rows = pl.read_csv(PREDICT_INPUT, infer_schema=False)
    rows.write_ndjson(tmp_path / "rows.jsonl")
    from_csv = predict_file(PREDICT_INPUT, tmp_path / "csv_out.csv", **configured.predict_options())
    from_jsonl = predict_file(tmp_path / "rows.jsonl", tmp_path / "jsonl_out.csv", **configured.predict_options())
    assert from_jsonl.height == rows.height == 10
    assert from_jsonl.equals(from_csv)


def test_unscorable_rows_get_a_reason_not_a_crash(in_trained_home, tmp_path: Path) -> None:
    result = predict_file(PREDICT_INPUT, tmp_path / "out.csv", **configured.predict_options())
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


def test_a_version_registered_before_contract_rows_predicts_through_the_configured_files(in_trained_home) -> None:
    # versions registered before the feature engineering travelled with the model have no `features`: the same
    # engineering runs with the configured reference files (here the very files the model carries)
    champion = load_champion(configured.resources().tracking_uri, configured.contract())
    rows = pl.read_csv(PREDICT_INPUT, infer_schema=False)
    carried = champion.predict(rows)
    champion.pyfunc.unwrap_python_model().features = None
    assert not champion.takes_contract_rows
    through_files = champion.predict(rows)
    assert through_files.equals(carried)
