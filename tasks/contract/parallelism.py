"""The `parallelism` column of the telemetry contract read as parallel sizes: free text as frameworks write it
("TP=4, PP=8, VP=12, GA=16", "FSDP 32, TP 8", "TP 2 EP 8 EDP 32", MaxText's "FSDP 8 (DCN)") -> `Layout`. The
structured model prices the layout; the model's feature rows and its coverage flags read it too."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# a layout size: the name, then "=", ":", "-", spaces or nothing, then the number ("TP 4", "TP=4", "TP-4", "TP4")
_SIZE = r"\s*[=:-]?\s*(\d+)"
# before a layout name: no letter (so TP is not read inside ETP), except the "x" of "TP8xPP4" / "EP8xETP1"
_NAME_START = r"(?<![A-WYZa-wyz])"
# the text names an expert-parallel size
EP_NAMED = re.compile(_NAME_START + r"EP\s*[=:-]?\s*\d", flags=re.IGNORECASE)


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


@lru_cache(maxsize=4096)
def parse_parallelism(text: str | None) -> Layout:
    """'TP=4, PP=8, VP=12, GA=16', 'TP 4 PP 8 CP 2 EP 8 ETP 1', 'TP4 PP8 VP5', 'tp4 pp8', 'tp:2',
    'FSDP 32, TP 8', 'FSDP FULL_SHARD; grad_accum 2',
    'TP 1; ZeRO-1 shard group 8; micro_num 4', 'model-parallel 64 (TP<=8 x PP); DP 24' -> sizes. Unreadable parts
    count as 1 (no model parallelism)."""
    if not isinstance(text, str) or not text.strip():
        return Layout()
    t = text.replace("AsyncTP", "TP")

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
                  vp=max(1, vp_text or 1), grad_accum=grad_accum, fsdp=fsdp, fsdp_across=across, given=True)
