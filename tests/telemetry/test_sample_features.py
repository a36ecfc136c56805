"""The bundled sample through the ingest into core.telemetry_runs and features.training_runs, and three
rows whose FLOPs per token and MFU are worked out by hand from the published numbers."""

from __future__ import annotations

import polars as pl
import pytest

from tasks.contract.features import build_features, refresh_feature_table
from tasks.contract.normalise import normalise_rows
from tasks.contract.schema import FEATURE_COLUMNS
from tasks.ingest.landing import landed_lines
from tests import configured
from tests.telemetry.helpers import SAMPLE, ingest, rejected


@pytest.fixture
def sample_features(con) -> pl.DataFrame:
    ingest(con, SAMPLE)
    refresh_feature_table(con, configured.reference())
    return con.sql("select * from features.training_runs").pl()


def test_every_sample_row_is_a_feature_row_or_quarantined_with_its_reason(con, sample_features) -> None:
    # The file has 336 data rows (SOURCES.md), lines 2..337, with 336 distinct run_ids.
    # - GPUs: H100-SXM, A100-80GB, A100-40GB: all in the alias table, all with bf16 peaks.
    # - Precisions: bf16, fp16/bf16 mixed (-> bf16), fp8, fp8 (hybrid), fp8-linear (-> fp8): all known;
    #   every fp8 row is on H100-SXM (fp8 peak 1979 TFLOP/s), so every run has a peak.
    # - Over peak: none. The largest 6 x N x tokens/s is the NeMo Llama-2-13B LoRA row (line 256, fp8):
    #   6 x 13e9 x 14629 = 1141 TFLOP/s < 1979 (and LoRA counts 4N: 761); the largest bf16 one is
    #   the Automodel Qwen2.5-7B LoRA row (line 269): 6 x 7.6e9 x 14110 = 643 TFLOP/s < 989.
    #   A100 rows peak at 6 x 7.29e9 x 4103 = 179.6 TFLOP/s (InternEvo, line 327) < 312.
    # - The 10 OLMo-core rows (lines 274-283) publish no GPU count: num_gpus is empty -> quarantined.
    # So 336 - 10 = 326 feature rows and 10 quarantined rows, all for num_gpus.
    assert sample_features.height == 326
    assert sample_features.columns == list(FEATURE_COLUMNS)
    bad = rejected(con)
    assert bad.height == 10
    assert bad["source_line"].to_list() == list(range(274, 284))
    assert set(bad["failed_check"]) == {"expect_column_values_to_not_be_null(num_gpus): num_gpus missing"}
    # the file landed whole (a header and 336 lines); every run's and every rejected row's line is one of them
    [(landed, sha)] = con.sql("select landed_path, content_sha256 from raw.ingested_files").fetchall()
    assert landed.endswith(".csv.zst") and len(landed_lines(con, sha)) == 337
    assert con.sql("select count(*) from core.telemetry_runs").fetchall()[0][0] == 326
    # source_group is the repository: 216 llm-foundry rows (SOURCES.md), none of them OLMo
    groups = dict(sample_features.group_by("source_group").len().iter_rows())
    assert groups["mosaicml/llm-foundry"] == 216
    assert "allenai/OLMo-core" not in groups


def _row(features: pl.DataFrame, run_id: str) -> dict:
    rows = features.filter(pl.col("run_id") == run_id).to_dicts()
    assert len(rows) == 1
    return rows[0]


def test_llm_foundry_a100_row(sample_features) -> None:
    # line 79: MPT-70b (64.8624e9 params) on 64 x A100-80GB, seq 2048, bf16, 410 tokens/s/GPU.
    # MPT-70b shape (llm-foundry yamls/pretrain/mpt-70b.yaml): n_layers 80, d_model 8192.
    row = _row(sample_features, "llm-foundry-214423f80b")
    attention = 12 * 80 * 8192 * 2048          # = 16,106,127,360 FLOPs per token
    flops = 6 * 64.8624e9 + attention          # = 389,174,400,000 + 16,106,127,360 = 405,280,527,360
    assert row["attention_flops_per_token"] == pytest.approx(16_106_127_360)
    assert row["flops_per_token"] == pytest.approx(405_280_527_360, rel=1e-12)
    assert row["flops_per_token"] == pytest.approx(flops, rel=1e-12)
    # achieved = 410 x 405.28052736e9 = 166.165016218e12 FLOP/s; A100 bf16 dense peak 312 TFLOP/s
    assert row["achieved_tflops_per_gpu"] == pytest.approx(166.1650162176, rel=1e-9)
    assert row["mfu"] == pytest.approx(166.1650162176 / 312, rel=1e-9)  # = 0.53258 (source printed 0.5333)
    assert row["peak_tflops"] == 312
    assert row["attention_term_known"] is True
    # 4,194,304 tokens per step / 64 GPUs = 65,536; 64.8624 / 64 = 1.0134750 B params per GPU
    assert row["tokens_per_gpu_per_step"] == 65_536
    assert row["params_per_gpu_b"] == pytest.approx(1.013475)
    # 1.013475e9 params / 80 GB = 12,668,437.5 params per GB
    assert row["memory_pressure_params_per_gb"] == pytest.approx(12_668_437.5)
    # tokens/s at MFU 1: 312e12 / 405.28052736e9 = 769.837...
    assert row["physics_bound_tokens_per_sec_per_gpu"] == pytest.approx(312e12 / 405_280_527_360)
    assert row["log2_num_gpus"] == 6
    assert row["source_group"] == "mosaicml/llm-foundry"


def test_megatron_h100_fp8_row(sample_features) -> None:
    # line 237: Llama-3-8B (8.03e9) on 8 x H100-SXM, seq 8192, "fp8 (hybrid)" -> fp8, 13812 tokens/s/GPU.
    # Llama-3-8B shape: 32 layers, d_model 4096.
    row = _row(sample_features, "megatron-lm-38bc35315d")
    attention = 12 * 32 * 4096 * 8192          # = 12,884,901,888
    assert attention == 12_884_901_888
    # 6 x 8.03e9 = 48,180,000,000; + 12,884,901,888 = 61,064,901,888 FLOPs per token
    assert row["flops_per_token"] == pytest.approx(61_064_901_888, rel=1e-12)
    # achieved = 13812 x 61,064,901,888 = 793,843,724,544,000 (x 13000) + 49,584,700,333,056 (x 812)
    #          = 843,428,424,877,056 FLOP/s; fp8 peak 1979 TFLOP/s
    assert row["precision"] == "fp8"
    assert row["peak_tflops"] == 1979
    assert row["achieved_tflops_per_gpu"] == pytest.approx(843.428424877056, rel=1e-9)
    assert row["mfu"] == pytest.approx(843.428424877056 / 1979, rel=1e-9)  # = 0.42619
    assert row["source_group"] == "NVIDIA/Megatron-LM"


def test_lora_row(sample_features) -> None:
    # line 268: Llama-3-8B LoRA on 1 x H100-SXM, bf16, seq 4096, 12472.9 tokens/s/GPU.
    # LoRA: frozen base weights -> 4 x N (forward 2N + backward through activations 2N) + attention.
    row = _row(sample_features, "nemo-automodel-5db67de641")
    # 4 x 8.03e9 = 32,120,000,000; attention 12 x 32 x 4096 x 4096 = 6,442,450,944; sum 38,562,450,944
    assert row["attention_flops_per_token"] == pytest.approx(6_442_450_944)
    assert row["flops_per_token"] == pytest.approx(38_562_450_944, rel=1e-12)
    # achieved = 12472.9 x 38,562,450,944 = 462,749,411,328,000 (x 12000) + 18,236,183,051,417.6 (x 472.9)
    #          = 480,985,594,379,417.6 FLOP/s; bf16 peak 989 TFLOP/s
    assert row["achieved_tflops_per_gpu"] == pytest.approx(480.9855943794176, rel=1e-9)
    assert row["mfu"] == pytest.approx(480.9855943794176 / 989, rel=1e-9)  # = 0.48634
    assert row["workload"] == "lora"


def test_unknown_model_shape_has_no_attention_term(sample_features) -> None:
    # line 258: Nemotron-3-Super-120B-A12B (MoE, 12e9 active) has no shape in model_shapes.csv:
    # attention term 0, flops_per_token = 6 x 12e9 = 72e9
    row = _row(sample_features, "nemo-automodel-64319dcd65")
    assert row["attention_term_known"] is False
    assert row["attention_flops_per_token"] == 0
    assert row["flops_per_token"] == pytest.approx(72e9)
    assert row["is_moe"] is True


def test_build_features_on_prediction_input_without_throughput(con) -> None:
    runs = normalise_rows(con, pl.DataFrame({"run_id": ["w1", "w2"], "gpu": ["A100-80GB", "H100"], "num_gpus": [8, 16],
                          "model_name": ["MPT-7b", "unknown"], "params_b": [6.7, 7.0], "seq_len": [2048, 4096],
                          "precision": ["bf16", "fp8"], "workload": ["pretrain", "qlora"]}),
                          configured.aliases(), configured.vocabulary())
    features = build_features(con, runs, str(configured.reference().path("model_shapes")),
                              str(configured.reference().path("matmul_ceilings")))
    assert features.columns == list(FEATURE_COLUMNS)
    assert features["run_id"].to_list() == ["w1", "w2"]  # input order kept
    assert features["tokens_per_sec_per_gpu"].to_list() == [None, None]
    assert features["mfu"].to_list() == [None, None]
    # w1: 6 x 6.7e9 + 12 x 32 x 4096 x 2048 (MPT-7b) = 40.2e9 + 3,221,225,472 = 43,421,225,472
    # w2: QLoRA 4 x 7e9 = 28e9, shape unknown -> no attention term
    assert features["flops_per_token"].to_list() == pytest.approx([43_421_225_472, 28e9])
    # physics bound: 312e12 / 43,421,225,472 = 7185.4 tokens/s; 1979e12 / 28e9 = 70,678.6
    assert features["physics_bound_tokens_per_sec_per_gpu"].to_list() == pytest.approx(
        [312e12 / 43_421_225_472, 1979e12 / 28e9]
    )
