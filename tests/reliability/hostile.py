"""Hostile and malformed versions of the real sample files, for the property-based input tests.

Each seed is a small slice of a real sample in its native format. The strategies damage it (random bytes,
truncation, wrong encoding, hostile values in random cells or in every price field) or replace it.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.conftest import PRICE_SAMPLES

SQL_TEXT = "'; drop table core.price_observations; --"
HOSTILE_TEXT = [
    SQL_TEXT,
    "Robert'); DROP TABLE raw.ingested_files;--",
    "1e308", "-1e308", "1e999", "NaN", "nan", "inf", "-Infinity", "-5", "0", "-0.0",
    "99999999999999999999999999999", "", " ", "\x00", "null", "{'Gpus': [}", "9" * 5000,
]
HOSTILE_JSON: list[Any] = [
    *HOSTILE_TEXT, 1e308, -1e308, -5, 0, 10**30, math.nan, math.inf, -math.inf, None, [], {}, True,
]
HOSTILE_PRICES = ["-5", "0", "NaN", "inf", "-inf", "1e308", "1e999", "99999999999999999999999999999", SQL_TEXT]
NAMED_PRICES = ["-5", "NaN", "inf", "1e308", SQL_TEXT]  # each tried on every seed (the rest: by hypothesis)


@dataclass(frozen=True)
class Seed:
    format: str
    provider: str
    sample: str
    kind: str                       # csv | tsv | json
    price_fields: tuple[str, ...]   # column names or JSON keys holding prices (tsv: column indexes as text)
    head_lines: int = 25
    options: dict[str, Any] = field(default_factory=dict)
    loads_rows: bool = True         # False: the slice has no in-scope record (parser robustness only)

    def text(self) -> str:
        raw = (PRICE_SAMPLES / self.sample).read_text(encoding="utf-8")
        if self.format == "aws-offer" and self.kind == "csv":
            return aws_offer_with_an_in_scope_row(raw)
        if self.kind == "json":
            return json.dumps(trim_json(json.loads(raw)), indent=1)
        return "".join(raw.splitlines(keepends=True)[: self.head_lines])

    @property
    def suffix(self) -> str:
        return Path(self.sample).suffix


SEEDS = [
    Seed("skypilot", "lambda", "skypilot_v8_lambda_gpu.csv", "csv", ("Price", "SpotPrice")),
    Seed("aws-offer", "aws", "aws_pricelist_ec2_offer_index_sample_v20250912225308.csv", "csv", ("PricePerUnit",)),
    # loads one row: its EBS gp3 storage price (no in-scope instance)
    Seed("aws-offer", "aws", "aws_pricelist_ec2_offer_json_excerpt_opencost.json", "json", ("USD",)),
    Seed("aws-spot", "aws", "aws_spot_price_history_2022-05-31_gpu_az_ids.tsv", "tsv", ("3",)),
    Seed("azure-retail", "azure", "azure_retail_prices_items_westus_excerpt_first20rows.csv", "csv",
         ("retailPrice", "unitPrice"), loads_rows=False),
    Seed("azure-retail", "azure", "azure_retail_prices_gpu_westus.json", "json", ("retailPrice", "unitPrice")),
    Seed("gcp-billing", "gcp", "gcp_billing_catalog_skus_page_excerpt_opencost.json", "json", ("units", "nanos")),
    Seed("price-history", "gcp", "gcp_gpu_vm_price_history_cyclenerd_quarterly.csv", "csv",
         ("hour_usd", "hour_spot_usd")),
    Seed("price-history", "aws", "aws_p5.48xlarge_us-east-1_ondemand_daily_pricing_api.csv", "csv",
         ("price_usd",), options={"region": "us-east-1"}),
    Seed("owned", "owned", "owned_example.csv", "csv", ("usd_per_gpu_hour_amortised", "electricity_usd_per_kwh")),
]


def aws_offer_with_an_in_scope_row(raw: str) -> str:
    """The AWS offer CSV sample has no in-scope row: as in tests/prices, its g5.48xlarge row is made a
    Linux / Shared / Used one (8 x A10G, 21.30264 USD per hour) and put after the preamble, header and 10 rows."""
    lines = raw.splitlines()
    g5 = next(line for line in lines if "g5.48xlarge" in line)
    g5 = g5.replace('"Dedicated"', '"Shared"').replace('"SUSE"', '"Linux"')
    g5 = g5.replace('"UnusedCapacityReservation"', '"Used"')
    return "\n".join([*lines[:16], g5]) + "\n"


def trim_json(value: Any, keep: int = 8) -> Any:
    """Every list cut to its first `keep` items (the big samples stay small and keep their shape)."""
    if isinstance(value, list):
        return [trim_json(v, keep) for v in value[:keep]]
    if isinstance(value, dict):
        return {k: trim_json(v, keep) for k, v in value.items()}
    return value


# --- CSV / TSV -------------------------------------------------------------------------------------------

def read_rows(text: str, kind: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text), delimiter="\t" if kind == "tsv" else ","))


def write_rows(rows: list[list[str]], kind: str) -> str:
    out = io.StringIO()
    csv.writer(out, delimiter="\t" if kind == "tsv" else ",", lineterminator="\n").writerows(rows)
    return out.getvalue()


def header_index(rows: list[list[str]], seed: Seed) -> int | None:
    """The row holding the column names (the AWS offer CSV has metadata lines above it); None for TSV."""
    if seed.kind == "tsv":
        return None
    for index, row in enumerate(rows):
        if any(name in row for name in seed.price_fields):
            return index
    return 0


def price_columns(rows: list[list[str]], seed: Seed) -> tuple[int, list[int]]:
    head = header_index(rows, seed)
    if head is None:
        return -1, [int(i) for i in seed.price_fields]
    return head, [i for i, name in enumerate(rows[head]) if name in seed.price_fields]


def set_prices_csv(text: str, seed: Seed, value: str) -> str:
    rows = read_rows(text, seed.kind)
    head, columns = price_columns(rows, seed)
    for row in rows[head + 1:]:
        for c in columns:
            if c < len(row):
                row[c] = value
    return write_rows(rows, seed.kind)


def duplicate_header(text: str, seed: Seed) -> str:
    """The first column name repeated at the end of the header (and a value for it in every row)."""
    rows = read_rows(text, seed.kind)
    head = header_index(rows, seed) or 0
    for row in rows[head:]:
        if row:
            row.append(row[0])
    return write_rows(rows, seed.kind)


def wide_row(text: str, seed: Seed, columns: int = 100_000) -> str:
    """A data row of 10^5 fields after the real rows."""
    return text.rstrip("\n") + "\n" + ("\t" if seed.kind == "tsv" else ",").join(["1"] * columns) + "\n"


# --- JSON ------------------------------------------------------------------------------------------------

def leaf_paths(value: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in leaf_paths(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in leaf_paths(v, (*path, i))]
    return [path]


def set_leaf(value: Any, path: tuple, new: Any) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


def set_prices_json(text: str, seed: Seed, new: Any) -> str:
    document = json.loads(text)
    for path in leaf_paths(document):
        if path and path[-1] in seed.price_fields:
            set_leaf(document, path, new)
    return json.dumps(document)


# --- strategies ------------------------------------------------------------------------------------------

@st.composite
def damaged(draw: st.DrawFn, seed: Seed) -> bytes:
    """The seed file damaged one way, or random bytes."""
    text = seed.text()
    way = draw(st.sampled_from(["bytes", "truncated", "encoding", "cells", "prices"]))
    if way == "bytes":
        return draw(st.binary(max_size=3000))
    if way == "truncated":
        data = text.encode("utf-8")
        return data[: draw(st.integers(0, len(data) - 1))]
    if way == "encoding":
        accented = text.replace("a", "\u00e9", draw(st.integers(1, 50)))
        return accented.encode(draw(st.sampled_from(["latin-1", "utf-16", "utf-16-be", "cp1252"])))
    if seed.kind == "json":
        document = json.loads(text)
        if way == "prices":
            return set_prices_json(text, seed, draw(st.sampled_from(HOSTILE_JSON))).encode()
        paths = leaf_paths(document)
        for _ in range(draw(st.integers(1, 8))):
            set_leaf(document, draw(st.sampled_from(paths)), draw(st.sampled_from(HOSTILE_JSON)))
        return json.dumps(document).encode()
    if way == "prices":
        return set_prices_csv(text, seed, draw(st.sampled_from(HOSTILE_PRICES))).encode()
    rows = read_rows(text, seed.kind)
    for _ in range(draw(st.integers(1, 8))):
        r = draw(st.integers(0, len(rows) - 1))
        if rows[r]:
            rows[r][draw(st.integers(0, len(rows[r]) - 1))] = draw(st.sampled_from(HOSTILE_TEXT))
    return write_rows(rows, seed.kind).encode()
