"""Adapter: gcp_billing (to be written)."""

from __future__ import annotations

from pathlib import Path

from tasks.prices.adapters import AdapterContext, AdapterResult


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    raise NotImplementedError("gcp_billing adapter is not written yet")
