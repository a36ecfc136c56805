"""What a provider module declares: its name, the formats its adapters read, and, when prices can be
downloaded from it, its fetcher and the model of its config/fetch.toml section."""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from dataclasses import dataclass

from tasks.fetch.context import Fetcher
from tasks.prices.adapter import Reader
from tasks.settings import Strict


@dataclass(frozen=True, eq=False)
class Provider:
    """A price source. `name` is what config/fetch.toml, `gpucost fetch --provider` and
    GPUCOST_FETCH_<NAME>_URL call it; `formats` what config/sources.toml and `--format` call its adapters."""

    name: str
    formats: Mapping[str, Reader]  # the adapter of each format (tasks/prices/adapter.py: the one contract)
    fetch: Fetcher | None = None  # None: a format read from files only (no API to download from)
    # config/fetch.toml [name]; needs a `url` field (GPUCOST_FETCH_<NAME>_URL replaces it)
    config: type[Strict] | None = None

    @property
    def section(self) -> str:
        """The attribute of the fetch config holding this provider's section (`aws-spot` -> `aws_spot`)."""
        attribute = self.name.replace("-", "_")
        return attribute + "_" if keyword.iskeyword(attribute) else attribute
