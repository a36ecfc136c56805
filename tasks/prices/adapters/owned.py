"""Adapter: owned (to be written)."""

from __future__ import annotations

from pathlib import Path

from tasks.prices.adapters import AdapterContext, AdapterResult


def parse(path: Path, context: AdapterContext) -> AdapterResult:
    raise NotImplementedError("owned adapter is not written yet")
