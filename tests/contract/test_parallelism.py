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
