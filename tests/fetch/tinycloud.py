"""A provider that is not shipped, written as a new cloud's module would be: its config model, its fetcher,
its format and adapter, declared as one `Provider`. tests/fetch/test_new_provider.py registers it in the
one list and fetches and ingests its prices with no other change to the project.

Its API (invented for the test; the prices it serves are real rows of the bundled SkyPilot Lambda catalog):
`GET <url>` -> `{"machines": [{"id", "accelerator", "accelerators", "region", "usd_per_hour"}, ...]}`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tasks.fetch.context import FetchContext, FetchedFile, ProviderResult
from tasks.prices.adapter import AdapterContext, AdapterError, AdapterResult, conform, frame_reader, read_json
from tasks.providers.provider import Provider
from tasks.settings import Strict


class TinycloudConfig(Strict):
    """config/fetch.toml [tinycloud] (optional: every key has a default)."""

    url: str = ""  # GPUCOST_FETCH_TINYCLOUD_URL replaces it
    regions: list[str] = []  # [] = every region the API lists


def fetch_tinycloud(ctx: FetchContext, result: ProviderResult) -> None:
    got = ctx.get(result, ctx.base_url, ctx.directory() / "machines.json")
    result.files.append(FetchedFile(got.path, "tinycloud", "tinycloud-json", {"regions": ctx.section.regions}))


def parse(path: Path, ctx: AdapterContext) -> AdapterResult:
    document = read_json(path)
    if not isinstance(document, dict) or not isinstance(document.get("machines"), list):
        raise AdapterError(f"{path.name}: not a tinycloud machines document (no 'machines' list)")
    frame = pl.DataFrame(document["machines"]).with_row_index("source_line", offset=1)
    regions = ctx.options.get("regions") or []
    if regions:
        frame = frame.filter(pl.col("region").is_in(regions))
    return AdapterResult(conform(frame.select(
        pl.lit(ctx.provider).alias("provider"), "region", pl.col("id").alias("instance_type"),
        pl.col("accelerator").alias("gpu_name"), pl.col("accelerators").alias("gpu_count"),
        pl.lit("on_demand").alias("pricing"), "usd_per_hour", pl.lit("USD").alias("currency"), "source_line",
        pl.struct(pl.all()).struct.json_encode().alias("raw_values"),
    )))


PROVIDER = Provider("tinycloud", formats={"tinycloud-json": frame_reader(parse)}, fetch=fetch_tinycloud,
                    config=TinycloudConfig)
