"""What a file to ingest is, apart from the lifecycle that ingests it: light, so the sources file
(tasks/sources.py) names price files without loading the ingest (DuckDB, Arrow) at the command line's start."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class FileSource:
    """One file to ingest, and how: the dataset it belongs to, and for price lists the provider it prices,
    the adapter (format) that reads it and the adapter's options (config/sources.toml)."""

    path: Path
    provider: str | None = None
    format: str | None = None
    options: dict[str, Any] | None = None
