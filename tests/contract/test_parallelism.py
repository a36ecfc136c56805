"""The contract's `parallelism` column read as parallel sizes (tasks/contract/parallelism.py)."""

from __future__ import annotations

from tasks.contract.parallelism import parse_parallelism


def test_layouts_are_read_from_free_text() -> None:
    lay = parse_parallelism("TP 4 PP 8 CP 2 EP 8 VP 8 MBS 1 GA 128")
    assert (lay.tp, lay.pp, lay.cp, lay.ep, lay.vp, lay.grad_accum, lay.fsdp) == (4, 8, 2, 8, 8, 128, False)
    lay = parse_parallelism("TP=4,PP=8, MBS=1, VP=12, SEQ=2048")
    assert (lay.tp, lay.pp, lay.vp) == (4, 8, 12)
    lay = parse_parallelism("FSDP 32, AsyncTP 8; compile")
    assert (lay.tp, lay.fsdp) == (8, True)
    assert parse_parallelism("FSDP FULL_SHARD; grad_accum 4").grad_accum == 4
    assert parse_parallelism(None).tp == 1
    # sharded data parallelism under its other names; expert tensor parallelism (absent: 0 = same as TP)
    assert all(parse_parallelism(t).fsdp for t in ("HSDP 8x4", "HYBRID_SHARD", "DeepSpeed ZeRO-3", "zero3"))
    assert not parse_parallelism("ZeRO-1 shard group 8").fsdp
    assert (parse_parallelism("TP 4 PP 1 CP 1 EP 8 ETP 4").etp, parse_parallelism("TP 4 EP 8").etp) == (4, 0)
    # Megatron-LM 2021: a model-parallel size with tensor parallelism capped at 8, the rest pipeline (1T: 8 x 64)
    lay = parse_parallelism("model-parallel 512 (TP<=8 x PP); DP 6")
    assert (lay.tp, lay.pp) == (8, 64)
    lay = parse_parallelism("model-parallel 4 (TP<=8 x PP); DP 32")
    assert (lay.tp, lay.pp) == (4, 1)
    # compact and other spellings: sizes joined by "x", Megatron's VPP, a dash, torchtitan's dp_shard (FSDP unless 1)
    lay = parse_parallelism("TP2xPP4xDP8")
    assert (lay.tp, lay.pp) == (2, 4)
    lay = parse_parallelism("EP8xETP1")
    assert (lay.ep, lay.etp, lay.tp) == (8, 1, 1)
    assert (parse_parallelism("VPP 4").vp, parse_parallelism("TP-8").tp) == (4, 8)
    assert [parse_parallelism(t).fsdp for t in ("dp_shard 8", "dp_shard=-1, TP 2", "dp_shard 1")] == [True, True,
                                                                                                      False]


def test_framework_config_names_read_as_the_short_ones() -> None:
    # Megatron-LM / NeMo arguments (dashes or underscores), expert tensor parallelism apart from tensor parallelism
    lay = parse_parallelism("--tensor-model-parallel-size 2 --pipeline-model-parallel-size 8 "
                            "--expert-model-parallel-size 32 --expert-tensor-parallel-size 1 "
                            "--num-virtual-stages-per-pipeline-rank 4 --context-parallel-size 2")
    assert (lay.tp, lay.pp, lay.ep, lay.etp, lay.vp, lay.cp, lay.ep_named) == (2, 8, 32, 1, 4, 2, True)
    # torchtitan's [parallelism] section: dp_shard -1 is FSDP over the data-parallel ranks
    lay = parse_parallelism("tensor_parallel_degree=2, pipeline_parallel_degree=4, expert_parallel_degree=8, "
                            "data_parallel_shard_degree=-1, gradient_accumulation_steps=16")
    assert (lay.tp, lay.pp, lay.ep, lay.fsdp, lay.grad_accum) == (2, 4, 8, True, 16)
    # MaxText: an axis of size 1 says nothing; dcn_fsdp is the FSDP group across nodes
    lay = parse_parallelism("dcn_fsdp_parallelism=8, ici_expert_parallelism=8, ici_tensor_parallelism=1")
    assert (lay.tp, lay.ep, lay.fsdp, lay.fsdp_across) == (1, 8, True, 8)
    # tuples of names and sizes, prose, DeepSpeed's degree
    assert [(lay.tp, lay.pp, lay.cp, lay.ep) for lay in map(parse_parallelism, (
        "(TP, PP, CP, EP) = (2, 4, 1, 8)", "TP/PP/EP: 2/4/8", "TPxPPxDP = 2x4x16", "2-way TP, 4-way PP"))] == [
        (2, 4, 1, 8), (2, 4, 1, 8), (2, 4, 1, 1), (2, 4, 1, 1)]
    assert parse_parallelism("pp_degree 8").pp == 8
    # a tuple whose sizes do not pair with its names is left as written (nothing read from it)
    assert (parse_parallelism("(TP, PP) = (2, 4, 8)").tp, parse_parallelism("(TP, PP) = (2, 4, 8)").pp) == (1, 1)
    # Megatron's sequence parallelism is a flag of tensor parallelism, not a size
    lay = parse_parallelism("sequence_parallel=True, tensor_model_parallel_size=4")
    assert (lay.tp, lay.cp, lay.ep_named) == (4, 1, False)
