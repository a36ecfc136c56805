"""normalise_runs: free spellings -> the contract's vocabulary, on ingest rows and prediction inputs."""

from __future__ import annotations

import polars as pl

from tasks.reference import read_aliases
from tasks.telemetry.normalise import normalise_runs


def test_precision_spellings_map_to_contract_values() -> None:
    spellings = ["amp_bf16", "bf16", "BF16", " bf16 ", "fp8 (hybrid)", "fp16/bf16 mixed",
                 "fp8-linear (torchao float8; rest bf16)", "FP16", "int3"]
    frame = pl.DataFrame({"precision": spellings})
    result = normalise_runs(frame, read_aliases())
    # config/telemetry.toml [precision]: mixed spellings -> the precision of the matmuls carrying the FLOPs;
    # "fp16/bf16 mixed" -> bf16 (equal fp16/bf16 peaks); an unlisted spelling stays unknown (null).
    assert result["precision"].to_list() == ["bf16", "bf16", "bf16", "bf16", "fp8", "bf16", "fp8", "fp16", None]
    assert result["precision_name"].to_list()[4] == "fp8 (hybrid)"


def test_booleans_workloads_and_defaults() -> None:
    frame = pl.DataFrame({
        "activation_checkpointing": ["True", "false", "yes", "1", "off", "full", None, "sometimes"],
        "workload": ["LoRA", "QLoRA", "fine-tune", None, "pretraining", "sft", "pretrain", "rlhf"],
        "params_b": ["7", "7", "7", "7", "7", "7", "7", "7"],
        "active_params_b": [None, "1.5", None, None, None, None, None, None],
    })
    result = normalise_runs(frame, read_aliases())
    assert result["activation_checkpointing"].to_list() == [True, False, True, True, False, True, None, None]
    # an unreadable boolean is named, not guessed
    assert result["unparsed_fields"].to_list()[7] == "activation_checkpointing='sometimes'"
    assert result["unparsed_fields"].to_list()[:7] == [None] * 7
    # missing workload -> pretrain; an unknown one stays null (quarantined by the suite)
    assert result["workload"].to_list() == ["lora", "qlora", "sft", "pretrain", "pretrain", "sft", "pretrain", None]
    # active_params_b defaults to params_b
    assert result["active_params_b"].to_list() == [7.0, 1.5, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0]


def test_gpu_names_resolve_exactly_through_the_alias_table() -> None:
    frame = pl.DataFrame({"gpu": ["H100", "H100-SXM", "A100", "a100-80gb", "h100", "RTX6000", "rtx6000"]})
    result = normalise_runs(frame, read_aliases())
    # data/reference/gpu_aliases.csv: H100 -> H100-SXM, A100 -> A100-40GB, a100-80gb -> A100-80GB,
    # RTX6000 (Lambda, Turing) and rtx6000 (GCP G4, Blackwell) differ; 'h100' is no alias.
    assert result["gpu"].to_list() == [
        "H100-SXM", "H100-SXM", "A100-40GB", "A100-80GB", None, "Quadro-RTX-6000", "RTX-PRO-6000-Server"
    ]


def test_throughput_from_tokens_processed_and_wall_seconds() -> None:
    frame = pl.DataFrame({"num_gpus": ["8", "4"], "tokens_processed": ["1440000000", None],
                          "wall_seconds": ["3600", None], "tokens_per_sec_per_gpu": [None, "2500"]})
    result = normalise_runs(frame, read_aliases())
    # 1.44e9 tokens / 3600 s / 8 GPUs = 50,000 tokens/s per GPU; a given figure is kept as is
    assert result["tokens_per_sec_per_gpu"].to_list() == [50_000.0, 2500.0]


def test_prediction_input_without_throughput_columns() -> None:
    frame = pl.DataFrame({"offer": ["a"], "gpu": ["H100"], "num_gpus": [8], "params_b": [7.0],
                          "seq_len": [4096], "precision": ["bf16"]})
    result = normalise_runs(frame, read_aliases())
    assert result["offer"].to_list() == ["a"]  # columns outside the contract pass through
    assert result["tokens_per_sec_per_gpu"].to_list() == [None]
    assert result["num_gpus"].to_list() == [8]
    assert result["workload"].to_list() == ["pretrain"]
