"""Bad telemetry: each fault quarantined with a clear reason, nothing else lost."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tasks.ingest.landing import landed_lines
from tests import configured
from tests.telemetry.helpers import SAMPLE, current_runs, ingest, rejected, sample_rows

GOOD = "llm-foundry-d8cd8403c5"   # line 2: MPT-70b, 512 x H100-SXM, bf16, 1007 tokens/s/GPU
A100 = "llm-foundry-214423f80b"   # line 79: MPT-70b, 64 x A100-80GB, bf16, 410 tokens/s/GPU


def _faulty_file(tmp_path: Path) -> Path:
    """Real sample rows, each but the first two given one fault (data line = index + 2)."""
    base = sample_rows(GOOD).to_dicts()[0]
    a100 = sample_rows(A100).to_dicts()[0]

    def variant(run_id: str | None, **changes: str | None) -> dict:
        return {**base, "run_id": run_id, **changes}

    rows = [
        base,                                                               # line 2: good
        a100,                                                               # line 3: good
        variant("bad-gpu", gpu="H100 SXM5 80GB (typo)"),                    # line 4
        variant("bad-precision", precision="int3"),                         # line 5
        variant("zero-throughput", tokens_per_sec_per_gpu="0"),             # line 6
        variant("negative-throughput", tokens_per_sec_per_gpu="-5"),        # line 7
        variant(None),                                                      # line 8: run_id missing
        variant("dup", tokens_per_sec_per_gpu="1000"),                      # line 9
        variant("dup", tokens_per_sec_per_gpu="1001"),                      # line 10: conflicts with 9
        # over peak: 6 x 64.8624e9 x 3000 = 1167.5 TFLOP/s > 989 (ratio 1.18)
        variant("over-peak", tokens_per_sec_per_gpu="3000"),                # line 11
        {**a100, "run_id": "a100-fp8", "precision": "fp8"},                 # line 12: A100 has no fp8 peak
        variant("same", tokens_per_sec_per_gpu="900"),                      # line 13
        variant("same", tokens_per_sec_per_gpu="900"),                      # line 14: identical to 13
        variant("words", num_gpus="eight"),                                 # line 15
    ]
    path = tmp_path / "faulty.csv"
    pl.DataFrame(rows, schema={c: pl.String for c in base}).write_csv(path)
    return path


def test_each_fault_has_its_reason_and_the_good_rows_load(con, tmp_path: Path) -> None:
    outcome = ingest(con, _faulty_file(tmp_path))
    reasons = dict(zip(rejected(con)["source_line"].to_list(), rejected(con)["failed_check"].to_list(), strict=True))
    assert sorted(reasons) == [4, 5, 6, 7, 8, 9, 10, 11, 12, 15]
    assert "unknown GPU" in reasons[4] and "unknown_gpu" in reasons[4]
    assert "unknown precision spelling" in reasons[5]
    assert reasons[6] == reasons[7]
    assert "throughput must be positive" in reasons[6]
    assert "run_id missing" in reasons[8]
    assert "duplicate run_id in one file with conflicting values (lines 9, 10)" in reasons[9]
    assert reasons[9] == reasons[10]
    assert "physically impossible throughput" in reasons[11]
    assert "no dense peak for this precision" in reasons[12]
    # a word where a count belongs: named with its value (and num_gpus is then missing)
    assert "num_gpus='eight'" in reasons[15] and "num_gpus missing" in reasons[15]
    for line in (4, 5, 6, 7, 8, 11, 12):   # one fault each -> one reason each
        assert reasons[line].count("expect_") == 1, reasons[line]
    # 14 rows: 10 quarantined, line 14 skipped as an identical duplicate of 13, 3 loaded (2, 3, 13)
    assert sorted(current_runs(con)["run_id"].to_list()) == sorted([GOOD, A100, "same"])
    assert (outcome.rows_read, outcome.rows_loaded, outcome.rows_quarantined, outcome.rows_skipped) == (14, 3, 10, 1)
    assert current_runs(con).filter(pl.col("run_id") == "same")["source_line"].to_list() == [13]
    # every record as read is in the landed file: a header and 14 lines
    assert len(landed_lines(con, outcome.content_sha256)) == 15
    assert outcome.notes[0] == "unknown GPU names: H100 SXM5 80GB (typo)"


def test_missing_required_column_is_a_file_error_naming_it(con, tmp_path: Path) -> None:
    path = tmp_path / "no_seq_len.csv"
    pl.read_csv(SAMPLE, infer_schema=False).head(5).drop("seq_len").write_csv(path)
    outcome = ingest(con, path)
    assert outcome.status == "quarantined"
    assert outcome.error == "missing required column 'seq_len'"
    files = con.sql("select source_file, error from quarantine.rejected_files").fetchall()
    assert files == [(str(path), "missing required column 'seq_len'")]
    assert current_runs(con).height == 0


def test_truncated_parquet_is_quarantined_and_the_next_file_still_loads(con, tmp_path: Path) -> None:
    whole = tmp_path / "slice.parquet"
    pl.read_csv(SAMPLE, infer_schema=False).head(20).write_parquet(whole)
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    bad = ingest(con, truncated)
    assert bad.status == "quarantined"
    assert bad.error.startswith("unreadable Parquet file")
    good = ingest(con, whole)
    # the first 20 sample rows (lines 2-21) are llm-foundry rows, all valid
    assert (good.status, good.rows_loaded, good.rows_quarantined) == ("loaded", 20, 0)
    assert current_runs(con).height == 20
    assert con.sql("select count(*) from quarantine.rejected_files").fetchall()[0][0] == 1


def test_columns_outside_the_contract_are_kept_in_the_landed_file_and_ignored(con, tmp_path: Path) -> None:
    path = tmp_path / "extra.csv"
    sample_rows(GOOD).with_columns(cluster_name=pl.lit("north-1")).write_csv(path)
    outcome = ingest(con, path)
    assert (outcome.rows_loaded, outcome.rows_quarantined) == (1, 0)
    [(sha, line)] = con.sql("select content_sha256, source_line from core.telemetry_runs").fetchall()
    lines = landed_lines(con, sha)
    assert lines[1].endswith(",cluster_name") and lines[line].endswith(",north-1")


def test_an_unexpected_error_while_normalising_quarantines_the_file_and_the_next_file_loads(
    con, tmp_path: Path, monkeypatch
) -> None:
    """Fault injection (fake failure): the normaliser's look-up (look_up_spellings) raising something no parse rule
    expects."""
    import tasks.contract.normalise as contract_normalise

    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    sample_rows(GOOD).write_csv(first)
    sample_rows(A100).write_csv(second)
    real_look_up = contract_normalise.look_up_spellings

    def broken(*args: object, **kwargs: object) -> pl.DataFrame:
        raise RuntimeError("injected fault")

    monkeypatch.setattr(contract_normalise, "look_up_spellings", broken)
    bad = ingest(con, first)
    assert (bad.status, bad.error) == ("quarantined", "cannot normalise: RuntimeError: injected fault")
    files = con.sql("select source_file, error from quarantine.rejected_files").fetchall()
    assert files == [(str(first), "cannot normalise: RuntimeError: injected fault")]
    # nothing of the file was stored: no run; the file is registered (the same bytes are not retried) with its
    # landed bytes
    assert current_runs(con).height == 0
    assert landed_lines(con, bad.content_sha256)[2].startswith(f"{GOOD},")
    assert con.sql("select status from raw.ingested_files where source_file = ?", params=[str(first)]).fetchall() == [
        ("quarantined",)
    ]
    monkeypatch.setattr(contract_normalise, "look_up_spellings", real_look_up)
    good = ingest(con, second)
    # the one A100 run (sample line 79) loads
    assert (good.status, good.rows_loaded) == ("loaded", 1)
    assert current_runs(con)["run_id"].to_list() == [A100]


def test_impossible_machine_and_moe_values_are_quarantined_with_their_reason(con, tmp_path: Path) -> None:
    """A network of no bandwidth, a scale-up domain of no GPU, an MoE shape with no expert, top-k above the experts,
    a negative count of shared experts: each quarantined with its reason; the same row with sound values loads."""
    base = sample_rows(GOOD).to_dicts()[0]
    faults = [
        {},                                                                  # line 2: good
        {"scale_out_gbps_per_gpu": "0"},                                     # line 3
        {"scale_out_gbps_per_gpu": "-400"},                                  # line 4
        {"scale_up_domain_gpus": "0"},                                       # line 5
        {"moe_experts": "0"},                                                # line 6
        {"moe_experts": "4", "moe_top_k": "8"},                              # line 7
        {"moe_top_k": "0"},                                                  # line 8
        {"moe_expert_ffn": "0"},                                             # line 9
        {"moe_shared_experts": "-1"},                                        # line 10
        {"scale_up_domain_gpus": "72", "scale_out_gbps_per_gpu": "800",     # line 11: good
         "moe_experts": "8", "moe_top_k": "2"},
    ]
    columns = ("scale_out_gbps_per_gpu", "scale_up_domain_gpus", "moe_experts", "moe_top_k", "moe_expert_ffn",
               "moe_shared_experts")
    rows = [{**base, **dict.fromkeys(columns), "run_id": f"r{i}", **fault} for i, fault in enumerate(faults)]
    path = tmp_path / "machines.csv"
    pl.DataFrame(rows, schema={c: pl.String for c in rows[0]}).write_csv(path)
    ingest(con, path)
    reasons = dict(zip(rejected(con)["source_line"].to_list(), rejected(con)["failed_check"].to_list(), strict=True))
    assert sorted(reasons) == [3, 4, 5, 6, 7, 8, 9, 10]
    assert "scale_out_gbps_per_gpu, when given, must be above 0" in reasons[3] and reasons[3] == reasons[4]
    assert "scale_up_domain_gpus, when given, must be at least 1" in reasons[5]
    assert "moe_experts, when given, must be at least 1" in reasons[6]
    assert "moe_top_k must not exceed moe_experts" in reasons[7]
    assert "moe_top_k, when given, must be at least 1" in reasons[8]
    assert "moe_expert_ffn, when given, must be at least 1" in reasons[9]
    assert "moe_shared_experts, when given, must be 0 or more" in reasons[10]
    assert sorted(current_runs(con)["run_id"].to_list()) == ["r0", "r9"]


def test_shape_and_machine_values_beyond_any_real_run_are_quarantined_and_the_bounds_themselves_load(
        con, tmp_path: Path) -> None:
    """config/telemetry.toml [validation]: max_n_layers 10000, max_d_model 1000000, max_moe_experts 100000 (also
    top-k and shared experts), max_moe_expert_ffn 1000000, max_scale_out_gbps_per_gpu 100000, a scale-up domain
    of at most max_num_gpus (250000); a row at every bound loads, one past any of them is quarantined, and so is a
    shape of no layer or no width (before, 1e12 layers or 1e300 Gb/s loaded and overflowed the training)."""
    base = sample_rows(GOOD).to_dicts()[0]
    at_bounds = {"n_layers": "10000", "d_model": "1000000", "moe_experts": "100000", "moe_top_k": "100000",
                 "moe_shared_experts": "100000", "moe_expert_ffn": "1000000", "scale_up_domain_gpus": "250000",
                 "scale_out_gbps_per_gpu": "100000"}
    faults = [
        at_bounds,                                                           # line 2: loads
        {"n_layers": "10001", "d_model": "4096"},                            # line 3
        {"n_layers": "32", "d_model": "1000001"},                            # line 4
        {"moe_experts": "100001", "moe_top_k": "2"},                         # line 5
        {"moe_experts": "8", "moe_shared_experts": "1000000000000"},         # line 6
        {"moe_experts": "8", "moe_expert_ffn": "1000001"},                   # line 7
        {"scale_up_domain_gpus": "250001"},                                  # line 8
        {"scale_out_gbps_per_gpu": "1e300"},                                 # line 9
        {"n_layers": "0", "d_model": "4096"},                                # line 10
        {"n_layers": "32", "d_model": "0"},                                  # line 11
    ]
    columns = tuple(at_bounds)
    rows = [{**base, **dict.fromkeys(columns), "run_id": f"r{i}", **fault} for i, fault in enumerate(faults)]
    path = tmp_path / "bounds.csv"
    pl.DataFrame(rows, schema={c: pl.String for c in rows[0]}).write_csv(path)
    ingest(con, path)
    reasons = dict(zip(rejected(con)["source_line"].to_list(), rejected(con)["failed_check"].to_list(), strict=True))
    assert sorted(reasons) == [3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert "n_layers, when given, must be at least 1 and at most max_n_layers" in reasons[3]
    assert "d_model, when given, must be at least 1 and at most max_d_model" in reasons[4]
    assert "moe_experts, when given, must be at least 1 (routed experts per MoE layer) and at most max_moe_experts" \
        in reasons[5]
    assert "moe_shared_experts, when given, must be 0 or more and at most max_moe_experts" in reasons[6]
    assert "moe_expert_ffn, when given, must be at least 1 (FFN size of one expert) and at most max_moe_expert_ffn" \
        in reasons[7]
    assert "scale_up_domain_gpus, when given, must be at least 1 (GPUs sharing NVLink / xGMI; 1: none) and at most " \
        "max_num_gpus" in reasons[8]
    assert "scale_out_gbps_per_gpu, when given, must be above 0 (network per GPU, Gb/s) and at most " \
        "max_scale_out_gbps_per_gpu" in reasons[9]
    assert "n_layers, when given, must be at least 1" in reasons[10]
    assert "d_model, when given, must be at least 1" in reasons[11]
    assert current_runs(con)["run_id"].to_list() == ["r0"]


def test_a_run_whose_ep_exceeds_its_models_experts_is_stored_but_kept_out_of_training(con, tmp_path: Path,
                                                                                     caplog) -> None:
    """The bundled Qwen3-30B-A3B run (128 routed experts, model_shapes.csv) at EP 8, and the same run at EP 256: both
    stored (nothing lost), the EP 256 one not learned from, as `gpucost predict` refuses to score it, with a warning."""
    from tasks.contract.features import refresh_feature_table
    from tasks.model.training import read_training_features

    run = "nemo-automodel-6330f05850"   # sample line 264: "FSDP 8 TP 1 PP 1 CP 1 EP 8 GA 16"
    base = sample_rows(run)
    wide = base.with_columns(run_id=pl.lit("ep256"), parallelism=pl.lit("FSDP 8 TP 1 PP 1 CP 1 EP 256 GA 16"))
    path = tmp_path / "ep.csv"
    pl.concat([base, wide]).write_csv(path)
    ingest(con, path)
    refresh_feature_table(con, configured.reference())
    assert sorted(current_runs(con)["run_id"].to_list()) == sorted([run, "ep256"])
    with caplog.at_level("WARNING", logger="gpucost.train"):
        training = read_training_features(con)
    assert training["run_id"].to_list() == [run]
    assert "ep256 (EP 256 exceeds the model's 128 routed experts" in caplog.text


def test_a_semicolon_separated_file_is_quarantined_saying_so(con, tmp_path: Path) -> None:
    """A spreadsheet's ';' export of real rows: its header reads as one column, so every required column is
    missing; the reason says why, not only the first column it lacks."""
    path = tmp_path / "semicolons.csv"
    pl.read_csv(SAMPLE, infer_schema=False).head(5).write_csv(path, separator=";")
    outcome = ingest(con, path)
    assert outcome.status == "quarantined"
    assert outcome.error is not None and outcome.error.startswith("missing required column 'run_id' (the header is "
                                                                  "one column, 'run_id;")
    assert outcome.error.endswith("the file looks separated by ';', and CSV is read as comma-separated)")
    assert current_runs(con).height == 0
