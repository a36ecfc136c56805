"""normalise_runs: free spellings -> the contract's vocabulary, on ingest rows and prediction inputs."""

from __future__ import annotations

import polars as pl
import pytest

from tasks.telemetry.normalise import normalise_runs, precision_of, unknown_spellings
from tests import configured


def test_precision_spellings_map_to_family_and_recipe() -> None:
    spellings = ["amp_bf16", "bf16", "BF16", " bf16 ", "fp8 (hybrid)", "fp16/bf16 mixed",
                 "fp8-linear (torchao float8; rest bf16)", "FP16", "int3", "mxfp8", "mxfp8 (MoE grouped GEMMs)",
                 "nvfp4", "fp8-cs", "fp8-linear(rowwise)", "fp8-linear(tensorwise)",
                 "fp8-blockwise(1x128 activations, 128x128 weights)", "fp8", "fp8-linear(rowwise, fsdp)"]
    frame = pl.DataFrame({"precision": spellings})
    result = normalise_runs(frame, configured.aliases(), configured.vocabulary())
    # config/telemetry.toml [precision]: the family is the linear matmuls' peak; "fp16/bf16 mixed" -> bf16
    # (equal fp16/bf16 peaks); an unlisted spelling stays unknown (null). [precision_prefix] catches the
    # free detail in parentheses ("fp8-blockwise(...)", "fp8-linear(rowwise, ...)").
    assert result["precision"].to_list() == [
        "bf16", "bf16", "bf16", "bf16", "fp8", "bf16", "fp8", "fp16", None, "fp8", "fp8",
        "fp4", "fp8", "fp8", "fp8", "fp8", "fp8", "fp8"]
    assert result["precision_recipe"].to_list() == [
        "none", "none", "none", "none", "delayed", "none", "tensorwise", "none", None, "mx", "mx",
        "nv", "current", "rowwise", "tensorwise", "blockwise", "delayed", "rowwise"]
    assert result["precision_name"].to_list()[4] == "fp8 (hybrid)"
    assert result["precision_name"].to_list()[10] == "mxfp8 (MoE grouped GEMMs)"


def test_activation_checkpointing_categories_workloads_and_defaults() -> None:
    frame = pl.DataFrame({
        "activation_checkpointing": ["True", "false", "yes", "1", "off", "full", None, "sometimes",
                                     "per-op selective", "Selective Layer", "selective op", "none",
                                     "full (recompute counted in TFLOPs)", "default (selective per config)"],
        "workload": ["LoRA", "QLoRA", "fine-tune", None, "pretraining", "sft", "pretrain", "rlhf"] + ["sft"] * 6,
        "params_b": ["7"] * 14,
        "active_params_b": [None, "1.5"] + [None] * 12,
    })
    result = normalise_runs(frame, configured.aliases(), configured.vocabulary())
    # config/telemetry.toml [activation_checkpointing]: True/False -> full/none, selective spellings -> selective
    assert result["activation_checkpointing"].to_list() == [
        "full", "none", "full", "full", "none", "full", None, None,
        "selective", "selective", "selective", "none", "full", "selective"]
    # an unknown spelling is named, not guessed (the ingest quarantines the row with this reason)
    assert result["unparsed_fields"].to_list()[7] == "activation_checkpointing='sometimes'"
    assert result["unparsed_fields"].to_list()[:7] == [None] * 7
    # missing workload -> pretrain; an unknown one stays null (quarantined by the suite)
    assert result["workload"].to_list()[:8] == ["lora", "qlora", "sft", "pretrain", "pretrain", "sft", "pretrain", None]
    # active_params_b defaults to params_b
    assert result["active_params_b"].to_list()[:3] == [7.0, 1.5, 7.0]


def test_unknown_spellings_are_listed_with_their_counts() -> None:
    frame = pl.DataFrame({
        "unknown_precision": ["int3", None, "int3", "fp6"],
        "unknown_workload": [None, "rlhf", None, None],
        "unparsed_fields": [None, "activation_checkpointing='sometimes'",
                            "num_gpus='x'; activation_checkpointing='sometimes'", None],
    })
    # two rows spell precision 'int3', one 'fp6'; 'sometimes' appears in two rows' unparsed fields
    assert unknown_spellings(frame) == [
        "activation_checkpointing 'sometimes' × 2", "precision 'fp6' × 1", "precision 'int3' × 2",
        "workload 'rlhf' × 1"]


def test_a_wrong_family_or_recipe_in_the_config_is_refused(tmp_path, monkeypatch) -> None:
    import shutil

    from tasks.settings import config_dir
    for name in config_dir().glob("*.toml"):
        shutil.copy(name, tmp_path / name.name)
    path = tmp_path / "telemetry.toml"
    path.write_text(path.read_text().replace('"fp8-cs" = { family = "fp8", recipe = "current" }',
                                             '"fp8-cs" = { family = "fp8", recipe = "sometimes" }'))
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="fp8-cs"):
        configured.vocabulary()


def test_gpu_names_resolve_exactly_then_case_insensitively_where_unambiguous() -> None:
    frame = pl.DataFrame({"gpu": ["H100", "H100-SXM", "A100", "a100-80gb", "h100", "RTX6000", "rtx6000", "Rtx6000",
                                  "nvidia  h100 80gb hbm3", "AMD Instinct MI300X", "NVIDIA A100-SXM4-80GB"]})
    result = normalise_runs(frame, configured.aliases(), configured.vocabulary())
    # data/reference/gpu_aliases.csv: H100 -> H100-SXM, A100 -> A100-40GB, a100-80gb -> A100-80GB,
    # RTX6000 (Lambda, Turing) and rtx6000 (GCP G4, Blackwell) differ, so 'Rtx6000' (either) stays unknown;
    # 'h100' is no alias but lower-cased only 'H100' has it; nvidia-smi / rocm-smi device names are aliases
    assert result["gpu"].to_list() == [
        "H100-SXM", "H100-SXM", "A100-40GB", "A100-80GB", "H100-SXM", "Quadro-RTX-6000", "RTX-PRO-6000-Server", None,
        "H100-SXM", "MI300X", "A100-80GB",
    ]


def test_throughput_from_tokens_processed_and_wall_seconds() -> None:
    frame = pl.DataFrame({"num_gpus": ["8", "4"], "tokens_processed": ["1440000000", None],
                          "wall_seconds": ["3600", None], "tokens_per_sec_per_gpu": [None, "2500"]})
    result = normalise_runs(frame, configured.aliases(), configured.vocabulary())
    # 1.44e9 tokens / 3600 s / 8 GPUs = 50,000 tokens/s per GPU; a given figure is kept as is
    assert result["tokens_per_sec_per_gpu"].to_list() == [50_000.0, 2500.0]


def test_prediction_input_without_throughput_columns() -> None:
    frame = pl.DataFrame({"offer": ["a"], "gpu": ["H100"], "num_gpus": [8], "params_b": [7.0],
                          "seq_len": [4096], "precision": ["bf16"]})
    result = normalise_runs(frame, configured.aliases(), configured.vocabulary())
    assert result["offer"].to_list() == ["a"]  # columns outside the contract pass through
    assert result["tokens_per_sec_per_gpu"].to_list() == [None]
    assert result["num_gpus"].to_list() == [8]
    assert result["workload"].to_list() == ["pretrain"]


@pytest.mark.parametrize(("spelling", "meaning"), [
    ("fp8 rowwise", ("fp8", "rowwise")),          # configured: fp8_rowwise, fp8-rowwise, float8 rowwise
    ("FP8 (rowwise)", ("fp8", "rowwise")),
    ("fp8_tensorwise", ("fp8", "tensorwise")),    # configured as such
    ("fp8 (blockwise)", ("fp8", "blockwise")),
    ("fp8_delayed_scaling", ("fp8", "delayed")),  # configured: fp8 delayed scaling
    ("bf16_mixed", ("bf16", "none")),             # configured: bf16-mixed, bf16 mixed
    ("int3", None),                               # no configured spelling: still unknown
])
def test_a_precision_spelled_with_other_separators_reads_as_the_configured_one(
        spelling: str, meaning: tuple[str, str] | None) -> None:
    assert precision_of(spelling, configured.vocabulary()) == meaning
