"""The contract's one normaliser (sql/contract/ run by tasks/contract/normalise.py): free spellings -> the
contract's vocabulary and types, on ingest records and prediction inputs alike, on an in-memory DuckDB (no
warehouse)."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest

from tasks.contract.normalise import NORMALISED_ROW_COLUMNS, normalise_rows, precision_of
from tasks.telemetry.ingest import unknown_spellings
from tests import configured


def normalise(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` through the normaliser on a fresh in-memory DuckDB, as `gpucost predict` runs it."""
    with duckdb.connect() as con:
        return normalise_rows(con, frame, configured.aliases(), configured.vocabulary())


def test_precision_spellings_map_to_family_and_recipe() -> None:
    spellings = ["amp_bf16", "bf16", "BF16", " bf16 ", "fp8 (hybrid)", "fp16/bf16 mixed",
                 "fp8-linear (torchao float8; rest bf16)", "FP16", "int3", "mxfp8", "mxfp8 (MoE grouped GEMMs)",
                 "nvfp4", "fp8-cs", "fp8-linear(rowwise)", "fp8-linear(tensorwise)",
                 "fp8-blockwise(1x128 activations, 128x128 weights)", "fp8", "fp8-linear(rowwise, fsdp)"]
    frame = pl.DataFrame({"precision": spellings})
    result = normalise(frame)
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
    result = normalise(frame)
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
    result = normalise(frame)
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
    result = normalise(frame)
    # 1.44e9 tokens / 3600 s / 8 GPUs = 50,000 tokens/s per GPU; a given figure is kept as is
    assert result["tokens_per_sec_per_gpu"].to_list() == [50_000.0, 2500.0]


def test_prediction_input_without_throughput_columns() -> None:
    frame = pl.DataFrame({"offer": ["a"], "gpu": ["H100"], "num_gpus": [8], "params_b": [7.0],
                          "seq_len": [4096], "precision": ["bf16"]})
    result = normalise(frame)
    assert result.columns == list(NORMALISED_ROW_COLUMNS)  # every contract column; columns outside it are no input
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


# A run every cell of which reads; each row of awkward_records changes one cell of it.
BASE = {"run_id": "r", "gpu": "H100-SXM", "num_gpus": "8", "params_b": "7", "seq_len": "4096", "precision": "bf16",
        "tokens_per_sec_per_gpu": "3000.5", "recorded_at": "2025-01-02T03:04:05Z", "workload": "sft",
        "activation_checkpointing": "full", "mfu": "0.41", "scale_out_gbps_per_gpu": "400"}
AWKWARD: dict[str, list[str | None]] = {
    # exponents, NaN, inf; Unicode white space around a number; a comma, two signs, an overflow; a blank cell
    "params_b": ["1e-5", "-2.5e-5", "1.234e-7", "1e-300", "1e16", "123456789.123", "nan", "inf", "-0", " 7 ",
                 "\u00a07\u3000", "1,5", "+-1", "7.", ".5", "1e400", "1e", "   ", "0x10", "1_0"],
    "num_gpus": ["8.0", "2.5", "1e3", "9223372036854775808", " 16", "eight", "-4", "+8"],
    "recorded_at": ["2025-01-02 03:04:05 UTC", "2025-01-02T03:04:05.123456+05:30", "2025-02-30T00:00:00",
                    "2025-01-02T24:00:00", "2025-01-02", "20250102T030405", " 2025-01-02T03:04:05Z",
                    "2025-01-02T03:04:05.1234567Z", "0999-12-31T00:00:00"],
    "precision": ["BF16", " bf16 ", "fp8-linear(rowwise, fsdp)", "int3", "   "],
    "workload": ["LoRA", "rlhf", "  ", None],
    "activation_checkpointing": ["True", "sometimes", " full "],
    # Unicode white space inside a GPU name (no-break, thin, vertical tab): one space, as Python's str.split sees it
    "gpu": [" H100-SXM ", "h100-sxm", "Z9000", "NVIDIA\u00a0H100 80GB HBM3", "nvidia  h100\u2009pcie", "nvidia\x0bl4"],
    "mfu": ["4.1e-05", "0.00001"],
    "scale_out_gbps_per_gpu": ["1.5e-9"],
    "tokens_per_sec_per_gpu": [None],
}


def awkward_records() -> pl.DataFrame:
    """BASE, then one row per awkward cell (60 rows, run ids r0..r59), as text; throughput also as 1e9 tokens in
    100 s (used where tokens_per_sec_per_gpu is blank)."""
    rows = [BASE] + [{**BASE, column: value} for column, values in AWKWARD.items() for value in values]
    rows = [{**row, "run_id": f"r{i}"} for i, row in enumerate(rows)]
    return pl.DataFrame(rows, schema={c: pl.String for c in BASE}).with_columns(
        tokens_processed=pl.lit("1e9"), wall_seconds=pl.lit("100"))


def test_awkward_cells_read_as_worked_out_by_hand() -> None:
    result = normalise(awkward_records())
    assert result.height == 60
    params, unparsed = result["params_b"].to_list(), result["unparsed_fields"].to_list()
    # rows 1-20 change params_b: 1e-5 and -2.5e-5 read as such; " 7 " and "<no-break space>7<ideographic space>"
    # (Unicode white space trimmed) read 7; "7." 7 and ".5" 0.5; nan and inf are no measurement; "1,5", "+-1",
    # "1e400" (overflows to inf), "1e", "0x10" and "1_0" are unreadable and named; a blank cell is missing, not unread
    assert params[1:3] == [1e-5, -2.5e-5] and params[10:12] == [7.0, 7.0] and params[14:16] == [7.0, 0.5]
    assert (unparsed[7], unparsed[8], unparsed[12], unparsed[13]) == (
        "params_b='nan'", "params_b='inf'", "params_b='1,5'", "params_b='+-1'")
    assert (unparsed[16], unparsed[17], unparsed[19], unparsed[20]) == (
        "params_b='1e400'", "params_b='1e'", "params_b='0x10'", "params_b='1_0'")
    assert params[18] is None and unparsed[18] is None and unparsed[10] is None
    # rows 21-28 change num_gpus: "8.0" is 8, 2.5 no whole number, 1e3 1000, 2^63 beyond BIGINT, " 16" 16, "+8" 8
    assert result["num_gpus"][21:29].to_list() == [8, None, 1000, None, 16, None, -4, 8]
    assert (unparsed[22], unparsed[24], unparsed[26]) == (
        "num_gpus='2.5'", "num_gpus='9223372036854775808'", "num_gpus='eight'")
    # rows 29-37 change recorded_at: " UTC" is +00:00, +05:30 is 5 h 30 min ahead of UTC, a date alone is midnight,
    # a leading space is trimmed; 30 February and 24:00 are unreadable
    moments = [None if m is None else m.isoformat() for m in result["recorded_at"][29:38].to_list()]
    assert moments[0] == "2025-01-02T03:04:05+00:00" and moments[1] == "2025-01-01T21:34:05.123456+00:00"
    assert moments[4] == "2025-01-02T00:00:00+00:00" and moments[6] == "2025-01-02T03:04:05+00:00"
    assert (unparsed[31], unparsed[32]) == ("recorded_at='2025-02-30T00:00:00'", "recorded_at='2025-01-02T24:00:00'")
    # rows 38-42 change precision: BF16 and " bf16 " are bf16, the rowwise prefix fp8 rowwise, int3 unknown (null,
    # its spelling kept), a blank one missing
    assert result["precision"][38:43].to_list() == ["bf16", "bf16", "fp8", None, None]
    assert result["precision_recipe"][38:43].to_list() == ["none", "none", "rowwise", None, None]
    assert result["precision_name"][38:43].to_list() == ["BF16", "bf16", "fp8-linear(rowwise, fsdp)", "int3", None]
    # rows 43-46 change workload: LoRA lora, rlhf unknown (null, kept as given), blank or missing pretrain
    assert result["workload"][43:47].to_list() == ["lora", None, "pretrain", "pretrain"]
    assert result["workload_name"][43:47].to_list() == ["LoRA", "rlhf", None, None]
    # rows 47-49 change activation checkpointing: True full, "sometimes" unreadable, " full " full
    assert result["activation_checkpointing"][47:50].to_list() == ["full", None, "full"]
    assert unparsed[48] == "activation_checkpointing='sometimes'"
    # rows 50-55 change gpu: trimmed, lower-cased, Unicode spaces as one: H100-SXM, H100-PCIe and L4; Z9000 unknown
    assert result["gpu"][50:56].to_list() == ["H100-SXM", "H100-SXM", None, "H100-SXM", "H100-PCIe", "L4"]
    assert result["gpu_name"][50:53].to_list() == ["H100-SXM", "h100-sxm", "Z9000"]
    # row 56 reads mfu 4.1e-05; row 59 has no throughput: 1e9 tokens / 100 s / 8 GPUs = 1,250,000 tokens/s per GPU
    assert result["mfu_reported"][56] == 4.1e-05 and result["tokens_per_sec_per_gpu"][59] == 1_250_000.0
    assert result["tokens_per_sec_per_gpu"][0] == 3000.5  # a given figure is kept
