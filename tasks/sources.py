"""The sources file (config/sources.toml): which adapter reads which price file, and which telemetry
files the nightly run ingests."""

from __future__ import annotations

import glob
from pathlib import Path

from tasks.prices.adapters import FORMATS
from tasks.prices.ingest import PriceSource
from tasks.settings import ConfigError, load_config, resolve_project_path


class SourceConfigError(ConfigError):
    pass


def _expand(pattern: str) -> list[Path]:
    path = resolve_project_path(pattern)
    matches = sorted(Path(p) for p in glob.glob(str(path)))
    return matches or [path]  # a missing file is reported by the ingest, not hidden here


def configured_price_sources() -> list[PriceSource]:
    sources: list[PriceSource] = []
    for index, entry in enumerate(load_config("sources").get("prices", []), start=1):
        missing = {"path", "provider", "format"} - entry.keys()
        if missing:
            raise SourceConfigError(f"sources.toml [[prices]] entry {index}: missing {', '.join(sorted(missing))}")
        if entry["format"] not in FORMATS:
            raise SourceConfigError(
                f"sources.toml [[prices]] entry {index}: unknown format {entry['format']!r} "
                f"(one of {', '.join(FORMATS)})"
            )
        options = {
            key: str(resolve_project_path(value)) if key.endswith(("_vms", "_path", "_file")) else value
            for key, value in entry.get("options", {}).items()
        }
        for path in _expand(entry["path"]):
            sources.append(PriceSource(path, entry["provider"], entry["format"], options))
    return sources


def price_sources_for(paths: list[Path], provider: str | None, fmt: str | None) -> list[PriceSource]:
    """CLI paths: with --provider/--format they say the adapter; without, the sources file must."""
    if provider and fmt:
        if fmt not in FORMATS:
            raise SourceConfigError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
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
                f"--provider NAME --format FORMAT (formats: {', '.join(FORMATS)})"
            )
        chosen.append(source)
    return chosen


def configured_telemetry_paths() -> list[Path]:
    paths: list[Path] = []
    for entry in load_config("sources").get("telemetry", []):
        paths.extend(_expand(entry["path"]))
    return paths



