"""The third bundled telemetry file (data/samples/telemetry/published_benchmarks_public_2026.csv) through the
ingest: what loads, what is quarantined and why, what is kept out of training, worked out from the file."""

from __future__ import annotations

import pytest

from tasks.contract.features import refresh_feature_table
from tests import configured
from tests.conftest import TELEMETRY_SAMPLES
from tests.telemetry.helpers import ingest, rejected

PUBLIC_2026 = TELEMETRY_SAMPLES / "published_benchmarks_public_2026.csv"


def test_public_2026_rows_load_or_are_quarantined_with_their_reason(con) -> None:
    # The file has 185 data rows (SOURCES.md: 113 LoRA, 53 MoE, 19 dense), lines 2..186.
    # - seq_len is empty on 10 rows, lines 8-17: the 7 torchtitan DeepEP Qwen3-30B-A3B runs (8-14) and the 3
    #   PyTorch-blog DeepSeek-V3 runs (15-17); it is not invented, so they are quarantined for it.
    # - Every GPU is known: H200-NVL (lines 140, 148) and MI350X (lines 76, 80) from their datasheets; H800,
    #   MI300X, MI325X, MI355X, H100/H200-SXM, B200, B300, GB200, GB300 were already.
    # - Every precision spelling of a loaded row is known: fp8 117, bf16 33 - 9 quarantined = 24, fp8-cs 14,
    #   mxfp8 9, nvfp4 (linear layers; ...) 4, fp8 (MaxText quantization=fp8) 3, fp4 2, mxfp8 (routed-expert
    #   grouped GEMMs + linears ...) 1, fp8 (fine-grained tile/block-wise FP8 ...) 1 (the one "mxfp8 (routed-expert
    #   grouped GEMMs only; rest bf16)" row is line 17, quarantined for its seq_len).
    # So 185 - 10 = 175 rows load and 10 are quarantined, all for seq_len.
    outcome = ingest(con, PUBLIC_2026)
    assert (outcome.status, outcome.rows_loaded, outcome.rows_quarantined) == ("loaded", 175, 10)
    bad = rejected(con)
    assert bad["source_line"].to_list() == list(range(8, 18))
    assert set(bad["failed_check"]) == {"expect_column_values_to_not_be_null(seq_len): seq_len missing"}
    recipes = dict(con.sql("select precision_name, precision || '/' || precision_recipe from core.telemetry_runs "
                           "group by all").fetchall())
    assert recipes["fp8 (MaxText quantization=fp8)"] == "fp8/delayed"
    assert recipes["fp8 (fine-grained tile/block-wise FP8 mixed precision)"] == "fp8/blockwise"
    assert recipes["nvfp4 (linear layers; FP8 attention recipe per config_common_fp8attn where sourced)"] == "fp4/nv"
    # quality_flag 'excluded: ...': 13 rows; the 3 PyTorch-blog ones are quarantined above, the 10 MaxText-on-Slurm
    # engineering-log rows (lines 28-37) load and are kept out of training
    flagged = con.sql("select count(*) from core.telemetry_runs where quality_flag like 'excluded:%'").fetchall()
    assert flagged == [(10,)]
    refresh_feature_table(con, configured.reference())
    by_kind = dict(con.sql(
        "select workload || '/' || (case when is_moe then 'moe' else 'dense' end), count(*) "
        "from features.training_runs where quality_flag is null group by all").fetchall())
    # trained on: 113 LoRA (dense 70B); MoE 53 - 7 - 3 quarantined - 10 flagged = 33; dense pretrain 19
    assert by_kind == {"lora/dense": 113, "pretrain/moe": 33, "pretrain/dense": 19}
    # the CV's source group is the source without its revision or edition (counted in the file's `source` column):
    # MLPerf v5.1 62 rows, the v5.0 fork 51 ('(fork of ...)@ab57af8bf' dropped), the three NeMo user-guide releases
    # as one document (8 + 8 + 6 = 22, less none quarantined), web pages by host (arxiv.org 1; pytorch.org's 3 rows
    # are quarantined)
    groups = dict(con.sql("select source_group, count(*) from features.training_runs group by all").fetchall())
    assert groups == {"mlcommons/training_results_v5.1": 62, "prishajain1/training_results_v5.0": 51,
                      "NVIDIA NeMo Framework User Guide, Performance Summary": 22,
                      "Richardyu114/training_results_v6.0": 11, "amd-agi/maxtext-slurm": 10, "ROCm/rocm-blogs": 8,
                      "yanring/Megatron-MoE-ModelZoo": 6, "pytorch/torchtitan": 2,
                      "NVIDIA NeMo AutoModel performance summary": 2, "arxiv.org": 1}


@pytest.mark.parametrize(("gpu", "peak_fp8_tflops"), [("H200-NVL", 1670.5), ("MI350X", 4614.0)])
def test_new_gpus_have_their_datasheet_fp8_peak(con, gpu: str, peak_fp8_tflops: float) -> None:
    ingest(con, PUBLIC_2026)
    refresh_feature_table(con, configured.reference())
    peaks = con.sql("select distinct peak_tflops from features.training_runs where gpu = ? and precision = 'fp8'",
                    params=[gpu]).fetchall()
    assert peaks == [(peak_fp8_tflops,)]
