"""Adapter: aws_offer (to be written)."""

from __future__ import annotations

from pathlib import Path

from tasks.prices.adapters import AdapterContext, AdapterResult


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    raise NotImplementedError("aws_offer adapter is not written yet")
