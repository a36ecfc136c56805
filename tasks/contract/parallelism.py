"""The `parallelism` column of the telemetry contract read as parallel sizes: free text as frameworks write it
("TP=4, PP=8, VP=12, GA=16", "FSDP 32, TP 8", "TP 2 EP 8 EDP 32", MaxText's "FSDP 8 (DCN)") -> `Layout`. The
structured model prices the layout; the model's feature rows and its coverage flags read it too."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

# a layout size: the name, then "=", ":", "-", spaces or nothing, then the number ("TP 4", "TP=4", "TP-4", "TP4")
_SIZE = r"\s*[=:-]?\s*(\d+)"
# before a layout name: no letter (so TP is not read inside ETP), except the "x" of "TP8xPP4" / "EP8xETP1"
_NAME_START = r"(?<![A-WYZa-wyz])"
# the text names an expert-parallel size
EP_NAMED = re.compile(_NAME_START + r"EP\s*[=:-]?\s*\d", flags=re.IGNORECASE)


# The same sizes as frameworks' configs name them, rewritten to the short names before reading (in this order):
# MaxText configs/base.yml (`ici_tensor_parallelism`, `dcn_fsdp_parallelism`: ici inside a node or slice, dcn
# across; an axis of size 1 says nothing), Megatron-LM / NeMo (`tensor_model_parallel_size`,
# `virtual_pipeline_model_parallel_size`, `num_virtual_stages_per_pipeline_rank`, `expert_tensor_parallel_size`),
# torchtitan ([parallelism] `tensor_parallel_degree`, `data_parallel_shard_degree`), DeepSpeed (`pp_degree`), and
# prose ("4-way tensor parallel").
_SEP = r"[-_ ]"
_PARALLEL = rf"parallel(?:ism)?(?:{_SEP}(?:size|degree))?"
_LONG_NAMES: tuple[tuple[str, str | Callable[[re.Match[str]], str]], ...] = (
    (r"\b(?:ici|dcn)_\w+?_parallelism\s*[=:]?\s*1\b", ""),
    (r"\bdcn_fsdp(?:_transpose)?_parallelism" + _SIZE, r"FSDP \1 (DCN)"),
    (r"\b(?:ici_|dcn_)?fsdp(?:_transpose)?_parallelism", "FSDP"),
    (r"\b(?:ici|dcn)_(?:sequence|context)_parallelism", "CP"),
    (rf"\bexpert{_SEP}tensor{_SEP}(?:model{_SEP})?{_PARALLEL}", "ETP"),
    (rf"\bexpert{_SEP}data{_SEP}{_PARALLEL}", "EDP"),
    (rf"\bvirtual{_SEP}pipeline{_SEP}(?:model{_SEP})?{_PARALLEL}", "VP"),
    (rf"\bnum{_SEP}virtual{_SEP}stages{_SEP}per{_SEP}pipeline{_SEP}rank", "VP"),
    (rf"\bdata{_SEP}parallel{_SEP}shard(?:{_SEP}degree)?", "dp_shard"),
    (rf"\b(?:ici_|dcn_)?(tensor|pipeline|context|expert){_SEP}(?:model{_SEP})?{_PARALLEL}",
     lambda m: {"t": "TP", "p": "PP", "c": "CP", "e": "EP"}[m.group(1)[0].lower()]),
    (rf"\b(tp|pp|cp|ep|etp|vpp?){_SEP}(?:size|degree)\b", lambda m: m.group(1).upper()),
    (rf"\bgradient{_SEP}accumulation(?:{_SEP}steps)?", "GA"),
    (r"\b(\d+)[- ]way\s+(TP|PP|CP|EP|ETP|VPP?|FSDP)\b", r"\2 \1"),
)
# a tuple of names and one of sizes: "(TP, PP, CP, EP) = (2, 4, 1, 8)", "TPxPPxDP = 4x2x16", "TP/PP/EP: 2/4/8"
_NAMES = r"(?:TP|PP|CP|EP|ETP|EDP|VPP?|DP|FSDP)"
_JOIN = r"\s*[,x×*/]\s*"
_TUPLE = re.compile(rf"\(?\s*((?:{_NAMES}{_JOIN})+{_NAMES})\s*\)?\s*[=:]\s*\(?\s*((?:\d+{_JOIN})+\d+)\s*\)?",
                    flags=re.IGNORECASE)


def spelled_short(text: str) -> str:
    """`text` with the frameworks' long names of parallel sizes and tuples of sizes rewritten as "TP 4 PP 2"."""
    for pattern, short in _LONG_NAMES:
        text = re.sub(pattern, short, text, flags=re.IGNORECASE)

    def pairs(match: re.Match[str]) -> str:
        names = re.split(_JOIN, match.group(1).strip())
        sizes = re.split(_JOIN, match.group(2).strip())
        if len(names) != len(sizes):
            return match.group(0)
        return " ".join(f"{n.upper()} {v}" for n, v in zip(names, sizes, strict=True))

    return _TUPLE.sub(pairs, text)


def _first_int(pattern: str, text: str) -> int | None:
    match = re.search(pattern, text, flags=re.IGNORECASE)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Layout:
    """Parallel sizes a `parallelism` text gives (1 where it says nothing; etp 0 = not said, i.e. = tp)."""

    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int = 0
    edp: int = 0            # expert data parallelism (Megatron's EDP; 0 = not said)
    vp: int = 1
    grad_accum: int | None = None
    fsdp: bool = False
    fsdp_across: int = 0    # an FSDP size named as spanning nodes (MaxText's "FSDP 8 (DCN)"); 0 = not said
    given: bool = False     # the text names any layout at all
    ep_named: bool = False  # the text names an expert-parallel size (EP 1 included)


@lru_cache(maxsize=4096)
def parse_parallelism(text: str | None) -> Layout:
    """'TP=4, PP=8, VP=12, GA=16', 'TP 4 PP 8 CP 2 EP 8 ETP 1', 'TP4 PP8 VP5', 'tp4 pp8', 'tp:2',
    'FSDP 32, TP 8', 'FSDP FULL_SHARD; grad_accum 2',
    'TP 1; ZeRO-1 shard group 8; micro_num 4', 'model-parallel 64 (TP<=8 x PP); DP 24' -> sizes. Unreadable parts
    count as 1 (no model parallelism)."""
    if not isinstance(text, str) or not text.strip():
        return Layout()
    t = spelled_short(text.replace("AsyncTP", "TP"))

    def size(name: str) -> int:
        value = _first_int(rf"{_NAME_START}{name}{_SIZE}", t)
        return max(1, value) if value else 1

    grad_accum = (_first_int(_NAME_START + r"GA" + _SIZE, t) or _first_int(r"grad_accum\s*(\d+)", t)
                  or _first_int(r"micro_num\s*(\d+)", t))
    vp_text = _first_int(_NAME_START + r"VPP?" + _SIZE, t)  # Megatron: VPP
    etp_text = _first_int(_NAME_START + r"ETP" + _SIZE, t)
    edp_text = _first_int(_NAME_START + r"EDP" + _SIZE, t)
    # FSDP, HSDP / hybrid shard (sharded inside a group: priced as FSDP), ZeRO stage 3
    # (torchtitan's dp_shard N, N other than 1: FSDP over N ranks, -1 = all the data-parallel ranks)
    fsdp = (bool(re.search(r"FSDP|HSDP|FULL_SHARD|HYBRID_SHARD|ZeRO[-_ ]?3|ZeRO stage 3", t, flags=re.IGNORECASE))
            and not re.search(r"FSDP\s+0\b", t)) or bool(
        re.search(r"dp_shard(?:_degree)?\s*[=:]?\s*(?!1\b)-?\d+", t, flags=re.IGNORECASE))
    tp, pp = size("TP"), size("PP")
    # Megatron-LM's 2021 table: "model-parallel 512 (TP<=8 x PP)": tensor parallel up to the cap inside a node,
    # pipeline over the rest (Narayanan et al. 2021: 1T = TP 8 x PP 64, 7.5B = TP 4)
    model_parallel = _first_int(r"model[- ]parallel\s*(\d+)", t)
    tp_cap = _first_int(_NAME_START + r"TP\s*<=\s*(\d+)", t)
    if model_parallel and tp_cap and tp == 1 and pp == 1:
        tp = max(1, min(tp_cap, model_parallel))
        pp = max(1, model_parallel // tp)
    # MaxText's dcn_fsdp_parallelism: the FSDP axis over the data-centre network, one GPU per node
    across = _first_int(_NAME_START + r"FSDP" + _SIZE + r"\s*\(DCN\)", t) or 0
    return Layout(tp=tp, pp=pp, cp=size("CP"), ep=size("EP"), etp=max(0, etp_text or 0), edp=max(0, edp_text or 0),
                  vp=max(1, vp_text or 1), grad_accum=grad_accum, fsdp=fsdp, fsdp_across=across, given=True,
                  ep_named=bool(EP_NAMED.search(t)))
