"""The sources file (config/sources.toml): which adapter reads which price file, and which telemetry
files the nightly run ingests."""

from __future__ import annotations

import glob
from pathlib import Path

from tasks import config
from tasks.config import Sources
from tasks.prices.ingest import PriceSource
from tasks.providers import registry
from tasks.settings import ConfigError, resolve_project_path


class SourceConfigError(ConfigError):
    pass


def _expand(pattern: str) -> list[Path]:
    path = resolve_project_path(pattern)
    matches = sorted(Path(p) for p in glob.glob(str(path)))
    return matches or [path]  # a missing file is reported by the ingest, not hidden here


def configured_price_sources(sources: Sources | None = None) -> list[PriceSource]:
    """The [[prices]] entries of config/sources.toml (or `sources`), each glob expanded. Keys and formats were
    checked when the file was read (tasks/config.py)."""
    found: list[PriceSource] = []
    for entry in (sources or config.sources()).prices:
        options = {
            key: str(resolve_project_path(str(value))) if key.endswith(("_vms", "_path", "_file")) else value
            for key, value in entry.options.items()
        }
        for path in _expand(entry.path):
            found.append(PriceSource(path, entry.provider, entry.format, options))
    return found


def price_sources_for(paths: list[Path], provider: str | None, fmt: str | None) -> list[PriceSource]:
    """CLI paths: with --provider/--format they say the adapter; without, the sources file must."""
    if provider and fmt:
        if fmt not in registry.formats():
            raise SourceConfigError(f"unknown format {fmt!r} (one of {', '.join(registry.formats())})")
        return [PriceSource(Path(p).resolve(), provider, fmt) for p in paths]
    if provider or fmt:
        raise SourceConfigError("give both --provider and --format, or neither (then config/sources.toml decides)")
    configured = {s.path.resolve(): s for s in configured_price_sources()}
    chosen: list[PriceSource] = []
    for p in paths:
        source = configured.get(Path(p).resolve())
        if source is None:
            raise SourceConfigError(
                f"{p}: not named in config/sources.toml; say which adapter reads it with "
                f"--provider NAME --format FORMAT (formats: {', '.join(registry.formats())})"
            )
        chosen.append(source)
    return chosen


def configured_telemetry_paths(sources: Sources | None = None) -> list[Path]:
    paths: list[Path] = []
    for entry in (sources or config.sources()).telemetry:
        paths.extend(_expand(entry.path))
    return paths



