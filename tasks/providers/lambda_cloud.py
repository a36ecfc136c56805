"""Lambda Cloud instance-types API (`GET /api/v1/instance-types`): `{"data": {name: {"instance_type": {...},
"regions_with_capacity_available": [{"name": ...}, ...]}}}`.

Quirks handled here:
- The price is `price_cents_per_hour` (US cents per instance-hour, an integer); it is the same in every
  region (Lambda prices are not regional).
- The response names no GPU model field, only a free-text `gpu_description`; the GPU is read from the
  instance type name the way SkyPilot's Lambda catalog does (`gpu_8x_h100_sxm5` -> `H100`,
  `gpu_8x_a100_80gb_sxm4` -> `A100-80GB`), so the alias table and data/reference/gpu_instance_overrides.csv
  (e.g. 1x/2x/4x A100 are PCIe) apply unchanged. Memory per GPU comes from `gpu_description` ("(80 GB …").
- A type is listed once per region with capacity right now. A type with no capacity anywhere still has
  a price: it is priced in `options.regions` (config/fetch.toml [lambda] regions) when given, otherwise
  skipped and counted ("no capacity in any region").
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import polars as pl

from tasks.fetch.context import FetchContext, FetchedFile, ProviderResult
from tasks.prices.adapter import (
    AdapterContext,
    AdapterError,
    AdapterResult,
    conform,
    empty_records,
    frame_reader,
    read_json,
)
from tasks.prices.numbers import comma_value_reason
from tasks.providers.provider import Provider
from tasks.settings import Strict

NAME = re.compile(r"^gpu_(\d+)x_([a-z0-9]+)(?:_(\d+gb))?")
MEMORY = re.compile(r"\((\d+(?:\.\d+)?)\s*GB", re.IGNORECASE)
NO_CAPACITY = "no capacity in any region (set [lambda] regions in config/fetch.toml to price such types)"
NOT_A_GPU_TYPE = "not a GPU instance type"


def gpu_name(instance_type: str) -> str | None:
    """SkyPilot's accelerator name for a Lambda instance type, or None for a name that is not `gpu_<n>x_<gpu>…`."""
    match = NAME.match(instance_type)
    if not match:
        return None
    _, model, memory = match.groups()
    return model.upper() + (f"-{memory.upper()}" if memory else "")


def _number(value: Any) -> float | None:
    try:
        return None if value is None or isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return None


def parse(path: Path, ctx: AdapterContext) -> AdapterResult:
    document = read_json(path)
    if not isinstance(document, dict) or not isinstance(document.get("data"), dict):
        raise AdapterError(f"{path.name}: not a Lambda instance-types response (no 'data' object)")
    default_regions = [str(r) for r in ctx.options.get("regions", [])]
    rows: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    for index, (key, item) in enumerate(document["data"].items(), start=1):
        item = item if isinstance(item, dict) else {}
        spec = found if isinstance(found := item.get("instance_type"), dict) else {}
        name = str(spec.get("name") or key)
        gpu = gpu_name(name)
        if gpu is None:
            skipped[NOT_A_GPU_TYPE] = skipped.get(NOT_A_GPU_TYPE, 0) + 1
            continue
        capacity = item.get("regions_with_capacity_available") or []
        regions = [r.get("name") for r in capacity if isinstance(r, dict) and r.get("name")] or default_regions
        if not regions:
            skipped[NO_CAPACITY] = skipped.get(NO_CAPACITY, 0) + 1
            continue
        specs = found_specs if isinstance(found_specs := spec.get("specs"), dict) else {}
        cents = _number(spec.get("price_cents_per_hour"))
        memory = MEMORY.search(str(spec.get("gpu_description") or ""))
        shape = NAME.match(name)  # matches: gpu_name found the GPU in it
        gpus = _number(specs.get("gpus")) or (float(shape.group(1)) if shape else None)
        raw = json.dumps(item, default=str)
        for region in regions:
            rows.append({
                "provider": ctx.provider, "region": region, "zone": None, "instance_type": name,
                "gpu_name": gpu, "gpu_count": gpus,
                "gpu_memory_gb": float(memory.group(1)) if memory else None,
                "vcpus": _number(specs.get("vcpus")), "memory_gb": _number(specs.get("memory_gib")),
                "pricing": "on_demand", "usd_per_hour": None if cents is None else cents / 100.0,
                "currency": "USD", "observed_at": None, "source_line": index, "raw_values": raw,
                # a missing or unreadable price is the suite's to quarantine (usd_per_hour null), with the record
                "rejected_reason": comma_value_reason("price_cents_per_hour", spec.get("price_cents_per_hour")),
            })
    records = conform(pl.DataFrame(rows, infer_schema_length=None)) if rows else empty_records()
    return AdapterResult(records=records, skipped_by_reason=skipped)


class LambdaConfig(Strict):
    """config/fetch.toml [lambda] (optional: a fetch.toml from before [lambda] still loads)."""

    url: str = "https://cloud.lambda.ai/api/v1/instance-types"
    api_key_env: str = "GPUCOST_LAMBDA_API_KEY"
    regions: list[str] = []  # where a type with no capacity right now is priced (Lambda prices are not regional)


def fetch_lambda(ctx: FetchContext, result: ProviderResult) -> None:
    """Lambda Cloud instance-types API: one JSON document (no paging), with the API key as a bearer token."""
    cfg = ctx.section
    key = os.environ.get(cfg.api_key_env, "").strip()
    if not key:
        result.skipped = f"no API key: set {cfg.api_key_env} (Lambda Cloud API key)"
        return
    got = ctx.get(result, ctx.base_url, ctx.directory() / "instance-types.json",
                  headers={"Authorization": f"Bearer {key}"})
    result.files.append(FetchedFile(got.saved, "lambda", "lambda-api", {"regions": cfg.regions}))


PROVIDER = Provider("lambda", formats={"lambda-api": frame_reader(parse)}, fetch=fetch_lambda, config=LambdaConfig)
