"""Generated telemetry-contract rows the bundled telemetry does not have, to probe the trained model with: GPUs named
as nvidia-smi / rocm-smi print them, dense and MoE model shapes (with and without the MoE columns, by hub names),
precisions and their spellings, parallelism spellings, and machines (HGX 8-GPU NVLink nodes, NVL72 racks, 1-GPU VMs
over a slow network). No throughput: only what a user asks the model about (no published throughput table).

Every model and GPU named here is in data/reference/model_shapes.csv and gpu_specs.csv (via gpu_aliases.csv)."""

from __future__ import annotations

from itertools import product
from typing import Any

# GPU as a run names it -> the canonical id of data/reference/gpu_aliases.csv (nvidia-smi / rocm-smi names and a
# lower-cased canonical id)
GPUS: dict[str, str] = {
    "NVIDIA H100 80GB HBM3": "H100-SXM",
    "NVIDIA H200": "H200-SXM",
    "NVIDIA B200": "B200",
    "NVIDIA GB200": "GB200",
    "NVIDIA A100-SXM4-80GB": "A100-80GB",
    "NVIDIA H800": "H800",
    "NVIDIA A800-SXM4-80GB": "A800",
    "NVIDIA H20": "H20",
    "AMD Instinct MI300X": "MI300X",
    "AMD Instinct MI355X": "MI355X",
    "h100-sxm": "H100-SXM",
}
# GPUs with an fp8 peak in gpu_specs.csv (A100/A800 have none: an fp8 row on them is unscored with that reason)
FP8_GPUS = tuple(g for g in GPUS if GPUS[g] not in ("A100-80GB", "A800"))

# model_name -> (total, active) parameters in billions (data/reference/model_shapes.csv names; the shapes come
# from there). MoE: Qwen3-30B-A3B fine-grained (128 experts, top-8), Mixtral coarse (8, top-2), DeepSeek-V3 (256,
# top-8, MLA, 3 dense layers)
DENSE = {"Llama-3.1-8B": (8.03, 8.03), "Llama-3.1-70B": (70.6, 70.6), "Llama-3.1-405B": (405.9, 405.9)}
MOE = {"Qwen3-30B-A3B": (30.5, 3.3), "Mixtral-8x7B": (46.7, 12.9), "DeepSeek-V3": (671.0, 37.0)}
# the MoE columns of the same models as a row may give them (model_shapes.csv values: experts, top-k, expert FFN,
# shared experts)
MOE_COLUMNS = {"Qwen3-30B-A3B": (128, 8, 768, 0), "Mixtral-8x7B": (8, 2, 14336, 0), "DeepSeek-V3": (256, 8, 2048, 1)}

# machines: scale-up domain (GPUs per NVLink / xGMI domain) and scale-out network per GPU (Gb/s)
MACHINES = {"hgx-400g": (8, 400.0), "nvl72": (72, 400.0), "vm-1gpu-50g": (1, 50.0), "hgx-3200g": (8, 3200.0)}

# spellings that must read as the same layout / precision
PARALLELISM_SPELLINGS = ("TP 4 PP 2 VP 5", "TP4 PP2 VP5", "tp4 pp2 vp5", "TP=4, PP=2, VP=5", "tp:4 pp:2 vp:5",
                         # Megatron-LM / NeMo arguments, torchtitan's [parallelism] keys, a tuple, prose
                         "tensor_model_parallel_size=4, pipeline_model_parallel_size=2, "
                         "virtual_pipeline_model_parallel_size=5",
                         "tensor_parallel_degree 4, pipeline_parallel_degree 2, num_virtual_stages_per_pipeline_rank 5",
                         "(TP, PP, VPP) = (4, 2, 5)", "4-way tensor parallel, 2-way pipeline parallel, VPP 5")
FP8_SPELLINGS = ("fp8", "fp8_e4m3", "FP8-hybrid", "float8", "te-fp8", "fp8-e4m3", "E4M3", "float8_e4m3fn")


def row(model: str = "Llama-3.1-70B", gpu: str = "NVIDIA H100 80GB HBM3", num_gpus: int = 64,
        precision: str = "bf16", parallelism: str = "TP 8 PP 1", machine: str | None = "hgx-400g",
        moe_columns: bool = False, **changes: Any) -> dict[str, Any]:
    """One contract row as text (what `gpucost predict` reads), without throughput."""
    total, active = {**DENSE, **MOE}[model]
    values: dict[str, Any] = {
        "run_id": f"{model}|{gpu}|{num_gpus}|{precision}|{parallelism}|{machine}", "gpu": gpu,
        "num_gpus": str(num_gpus), "model_name": model, "params_b": str(total), "active_params_b": str(active),
        "seq_len": "4096", "micro_batch": "1", "global_batch_tokens": str(4096 * 1024), "precision": precision,
        "parallelism": parallelism, "workload": "pretrain", "activation_checkpointing": "selective",
        "framework": "Megatron-LM",
    }
    if machine is not None:
        domain, network = MACHINES[machine]
        values |= {"scale_up_domain_gpus": str(domain), "scale_out_gbps_per_gpu": str(network)}
    if moe_columns and model in MOE_COLUMNS:
        experts, top_k, ffn, shared = MOE_COLUMNS[model]
        values |= {"moe_experts": str(experts), "moe_top_k": str(top_k), "moe_expert_ffn": str(ffn),
                   "moe_shared_experts": str(shared)}
    return values | {k: (None if v is None else str(v)) for k, v in changes.items()}


def layout(model: str, num_gpus: int) -> str:
    """A plausible layout: dense TP 8 (PP for the largest), MoE EP 8 (TP 2 x PP 4 for DeepSeek-V3's 671 B)."""
    if model == "DeepSeek-V3":
        return "TP 2 PP 4 EP 8"
    if model in MOE:
        return "TP 1 EP 8"
    return "TP 8 PP 4" if model == "Llama-3.1-405B" and num_gpus >= 32 else "TP 8 PP 1"


def grid() -> list[dict[str, Any]]:
    """GPUs x models (dense and MoE, MoE with and without its columns) x precision x machine, 64 GPUs each."""
    rows = []
    for gpu, model, precision, machine in product(GPUS, [*DENSE, *MOE], ("bf16", "fp8"), MACHINES):
        if precision == "fp8" and gpu not in FP8_GPUS:
            continue
        for given in ((False, True) if model in MOE else (False,)):
            rows.append(row(model, gpu, 64, precision, layout(model, 64), machine, moe_columns=given,
                            run_id=f"{gpu}|{model}|{precision}|{machine}|moe_columns={given}"))
    return rows
