"""The sources file (config/sources.toml) and its typed model: which adapter reads which price file, and
which telemetry files and MLflow servers the nightly run ingests."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator

from tasks.config import Strict
from tasks.ingest.source import FileSource as PriceSource  # tasks.prices.ingest.PriceSource, without the ingest
from tasks.providers import registry
from tasks.settings import ConfigError, resolve_project_path


class PriceEntry(Strict):
    path: Annotated[str, Field(min_length=1)]
    provider: Annotated[str, Field(min_length=1)]
    format: str
    options: dict[str, str | int | float | bool] = {}

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value not in registry.formats():
            raise ValueError(f"must be one of {', '.join(repr(f) for f in registry.formats())} (got {value!r})")
        return value


class TelemetryEntry(Strict):
    path: Annotated[str, Field(min_length=1)]


class MlflowEntry(Strict):
    tracking_uri: Annotated[str, Field(min_length=1)]
    experiments: Annotated[list[str], Field(min_length=1)]
    mapping: Annotated[str, Field(min_length=1)]


class Sources(Strict):
    """config/sources.toml."""

    prices: list[PriceEntry] = []
    telemetry: list[TelemetryEntry] = []
    mlflow: list[MlflowEntry] = []

class SourceConfigError(ConfigError):
    pass


def _expand(pattern: str) -> list[Path]:
    path = resolve_project_path(pattern)
    matches = sorted(Path(p) for p in glob.glob(str(path)))
    return matches or [path]  # a missing file is reported by the ingest, not hidden here


def configured_price_sources(sources: Sources) -> list[PriceSource]:
    """The [[prices]] entries of config/sources.toml, each glob expanded. Keys and formats were checked when
    the file was read."""
    found: list[PriceSource] = []
    for entry in sources.prices:
        options = {
            key: str(resolve_project_path(str(value))) if key.endswith(("_vms", "_path", "_file")) else value
            for key, value in entry.options.items()
        }
        for path in _expand(entry.path):
            found.append(PriceSource(path, entry.provider, entry.format, options))
    return found


def price_sources_for(
    paths: list[Path], provider: str | None, fmt: str | None, sources: Sources
) -> list[PriceSource]:
    """CLI paths: with --provider/--format they say the adapter; without, the sources file must."""
    if provider and fmt:
        if fmt not in registry.formats():
            raise SourceConfigError(f"unknown format {fmt!r} (one of {', '.join(registry.formats())})")
        return [PriceSource(Path(p).resolve(), provider, fmt) for p in paths]
    if provider or fmt:
        raise SourceConfigError("give both --provider and --format, or neither (then config/sources.toml decides)")
    configured = {s.path.resolve(): s for s in configured_price_sources(sources)}
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


def configured_telemetry_paths(sources: Sources) -> list[Path]:
    paths: list[Path] = []
    for entry in sources.telemetry:
        paths.extend(_expand(entry.path))
    return paths



