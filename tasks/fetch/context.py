"""What a fetcher is handed and what it hands back. A fetcher (in its provider's module, tasks/providers/)
downloads the provider's current prices in their native format into `downloads/<provider>/<UTC date>/`
and says which adapter reads each file; none of them parses prices.

A fetcher appends to its ProviderResult as it goes, so what arrived before a failure is kept (and
ingested) even when a later page or region fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from tasks.fetch.http import Download, FetchError, HttpPolicy, Progress, WrongFormat, download


@dataclass(frozen=True)
class FetchedFile:
    """A downloaded file and the adapter that reads it (what tasks.fetch.handoff ingests)."""

    path: Path
    provider: str  # the provider the prices are for (aws, azure, gcp, lambda, ...)
    format: str  # adapter name, as in config/sources.toml
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProviderResult:
    name: str  # the provider fetched
    downloads: list[Download] = field(default_factory=list)
    files: list[FetchedFile] = field(default_factory=list)
    quarantined: list[WrongFormat] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0
    files_rejected: int = 0  # handed-off files the adapter quarantined whole (set after the hand-off)
    disk_full: bool = False  # an error was the disk filling up (the command exits 6, as README's table says)

    @property
    def bytes(self) -> int:
        return sum(d.size_bytes for d in self.downloads if not d.assembled)

    @property
    def pages(self) -> int:
        return sum(not d.assembled for d in self.downloads)

    @property
    def status(self) -> str:
        """ok | unchanged (all 304) | partial (some arrived, something failed) | failed | skipped."""
        if self.skipped:
            return "skipped"
        usable = len(self.files) - self.files_rejected
        arrived = usable > 0 or any(d.not_modified and not d.is_index for d in self.downloads)
        if self.errors or self.files_rejected:
            return "partial" if arrived else "failed"
        return "ok" if self.files else "unchanged"

    @property
    def detail(self) -> str | None:
        if self.skipped:
            return self.skipped
        parts = list(self.errors)
        if self.files_rejected:
            parts.append(f"{self.files_rejected} of {len(self.files)} downloaded file(s) quarantined by the adapter "
                         "(see quarantine.rejected_files)")
        return "; ".join(parts) or None


@dataclass
class FetchContext:
    provider: str
    section: Any  # the provider's config/fetch.toml section (its own config model)
    base_url: str  # GPUCOST_FETCH_<PROVIDER>_URL if set, else the section's url
    http: HttpPolicy
    client: httpx.Client
    downloads_root: Path  # $GPUCOST_HOME/downloads
    fetched_at: datetime  # UTC start of the run
    validators: dict[str, dict[str, Any]]  # url -> newest download's etag/last_modified/path/content_in_warehouse
    spot_watermarks: dict[str, datetime]
    progress: Progress | None = None

    def directory(self) -> Path:
        return self.downloads_root / self.provider / self.fetched_at.strftime("%Y-%m-%d")

    def get(self, result: ProviderResult, url: str, target: Path, *, expect: str = "json",
            conditional: bool = False, **kwargs: Any) -> Download:
        """GET into target; conditional when the warehouse already has this URL's last content."""
        known = self.validators.get(url) if conditional else None
        validators = known if known and known.get("content_in_warehouse") else None
        try:
            got = download(self.client, url, target, self.http, validators=validators, expect=expect,
                           progress=self.progress, **kwargs)
        except WrongFormat as error:
            result.quarantined.append(error)
            raise
        result.downloads.append(got)
        return got


Fetcher = Callable[[FetchContext, ProviderResult], None]


def json_field(path: Path, key: str) -> Any:
    """One top-level field of a downloaded page (the pagination link; prices are the adapters' business)."""
    with open(path, encoding="utf-8") as fh:
        document = json.load(fh)
    if not isinstance(document, dict):
        raise FetchError(f"{path.name}: expected a JSON object with {key!r}")
    return document.get(key)
