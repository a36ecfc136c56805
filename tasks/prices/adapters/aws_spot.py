"""Adapter: aws_spot (to be written)."""

from __future__ import annotations

from pathlib import Path

from tasks.prices.adapters import AdapterContext, AdapterResult


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    raise NotImplementedError("aws_spot adapter is not written yet")
