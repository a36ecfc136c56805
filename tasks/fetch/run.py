"""One fetch run: prepare (prune, clean leftovers, read what the warehouse already has), fetch each provider
(one failing never stops the others), then record the downloads and hand the files to the adapters.

The warehouse is opened only before and after the downloads, so a long download never holds its lock.
Downloads are registered in the same step as they are ingested: a run killed midway registers nothing,
and the next run starts clean (partial files removed, nothing taken for already fetched).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tasks.fetch.config import FetchConfig
from tasks.fetch.context import FetchContext, ProviderResult
from tasks.fetch.handoff import PriceIngest, ingest_fetched
from tasks.fetch.http import Download, describe, make_client, provider_deadline, remove_partial_files
from tasks.fetch.progress import transfer_progress
from tasks.fetch.prune import prune_downloads
from tasks.ingest.quarantine import quarantine_file
from tasks.ingest.registry import FileOutcome
from tasks.providers import registry
from tasks.settings import Resources
from tasks.stores import disk_full_file
from tasks.warehouse import execute, query, transaction, warehouse

PRICES = "prices"  # the dataset name of price files in the registry and quarantine (tasks.prices.ingest.DATASET)


@dataclass
class FetchRun:
    config: FetchConfig
    run_id: str
    fetched_at: datetime
    downloads_root: Path
    warehouse: Path
    ingest: PriceIngest  # how the fetched files are ingested
    validators: dict[str, dict[str, dict[str, Any]]]  # provider -> url -> validators
    spot_watermarks: dict[str, datetime]
    pruned: list[Path] = field(default_factory=list)
    partial_files_removed: list[Path] = field(default_factory=list)


@dataclass
class FetchReport:
    run_id: str
    fetched_at: datetime
    results: list[ProviderResult]
    outcomes: list[FileOutcome]
    status: list[dict[str, Any]]  # marts.price_fetch_status rows

    def failed(self) -> list[ProviderResult]:
        return [r for r in self.results if r.status in ("failed", "partial")]


def start_run(config: FetchConfig, providers: Sequence[str], resources: Resources, ingest: PriceIngest,
              now: datetime | None = None) -> FetchRun:
    """Downloads go to `resources.downloads`; the files are ingested into `resources.warehouse` as `ingest` says."""
    fetched_at = (now or datetime.now(UTC)).astimezone(UTC)
    root = resources.downloads
    run = FetchRun(config, str(uuid.uuid4()), fetched_at, root, resources.warehouse, ingest, {}, {})
    run.partial_files_removed = remove_partial_files(root)
    run.pruned = prune_downloads(root, config.keep_days, fetched_at.date())
    with warehouse(run.warehouse) as con:
        for provider in providers:
            rows = query(con, "fetch/validators", {"provider": provider}).fetchall()
            run.validators[provider] = {
                url: {"etag": etag, "last_modified": modified, "path": path, "content_in_warehouse": in_warehouse}
                for url, etag, modified, path, _sha, in_warehouse in rows
            }
        run.spot_watermarks = dict(query(con, "fetch/spot_watermarks").fetchall())
    return run


def fetch_provider(run: FetchRun, provider: str) -> ProviderResult:
    """Everything one provider's API gives tonight; errors end up in the result, never raised."""
    result = ProviderResult(provider)
    started = time.perf_counter()
    with make_client(run.config.http) as client, transfer_progress(provider) as progress, \
            provider_deadline(run.config.http.provider_deadline_seconds):
        try:
            context = FetchContext(provider, run.config.section(provider), run.config.base_url(provider),
                                   run.config.http, client, run.downloads_root, run.fetched_at,
                                   run.validators.get(provider, {}), run.spot_watermarks, progress)
            fetcher = registry.provider(provider).fetch
            assert fetcher is not None, f"{provider} has no fetcher (FetchConfig lists fetchable providers only)"
            fetcher(context, result)
        except Exception as error:  # one provider failing never blocks the others
            result.errors.append(describe(error))
            result.disk_full = result.disk_full or disk_full_file(error) is not None
    result.seconds = time.perf_counter() - started
    return result


def _outcome(download: Download) -> str:
    return "not_modified" if download.not_modified else "assembled" if download.assembled else "downloaded"


def finish_run(run: FetchRun, results: Sequence[ProviderResult]) -> FetchReport:
    """Record downloads, quarantine wrong-format bodies, ingest the files, record each provider's attempt."""
    with warehouse(run.warehouse) as con:
        with transaction(con):
            for result in results:
                for d in result.downloads:
                    _record_download(con, run, result.name, d, _outcome(d))
                for wrong in result.quarantined:
                    quarantine_file(con, PRICES, str(wrong.path), wrong.sha256, f"fetch {result.name}: {wrong}",
                                    run.fetched_at)
                    _record_download(con, run, result.name, Download(
                        url=wrong.url, http_status=200, path=wrong.path,
                        size_bytes=wrong.size_bytes, content_sha256=wrong.sha256), "quarantined")
        outcomes: list[FileOutcome] = []
        for result in results:
            got = ingest_fetched(con, result.files, run.fetched_at, run.ingest)
            result.files_rejected = sum(o.status == "quarantined" for o in got)
            outcomes += got
        with transaction(con):
            for result in results:
                execute(con, "fetch/insert_attempt", {
                    "run_id": run.run_id, "provider": result.name, "status": result.status, "detail": result.detail,
                    "pages": result.pages, "files": len(result.files), "bytes": result.bytes,
                    "seconds": round(result.seconds, 3), "fetched_at": run.fetched_at,
                })
        cursor = query(con, "fetch/fetch_status")
        columns = [c for c in cursor.columns]
        status = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    return FetchReport(run.run_id, run.fetched_at, list(results), outcomes, status)


def _record_download(con: Any, run: FetchRun, provider: str, d: Download, outcome: str) -> None:
    execute(con, "fetch/insert_download", {
        "run_id": run.run_id, "provider": provider, "url": d.url, "http_status": d.http_status, "outcome": outcome,
        "etag": d.etag, "last_modified": d.last_modified, "content_type": d.content_type,
        "size_bytes": d.size_bytes, "content_sha256": d.content_sha256,
        "path": str(d.path) if d.path else None, "watermark": d.watermark, "fetched_at": run.fetched_at,
        "downloaded_at": d.downloaded_at,
    })


def fetch_once(config: FetchConfig, providers: Sequence[str], resources: Resources, ingest: PriceIngest,
               now: datetime | None = None) -> FetchReport:
    """The whole run as plain functions (the `fetch_prices` flow wires the same three steps)."""
    run = start_run(config, providers, resources, ingest, now)
    return finish_run(run, [fetch_provider(run, p) for p in providers])


def summary_markdown(report: FetchReport) -> str:
    lines = [
        "# Price fetch",
        "",
        f"Run {report.run_id} at {report.fetched_at:%Y-%m-%d %H:%M:%S} UTC.",
        "",
        "| provider | status | responses | files | MB | seconds | price age (days) | detail |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    ages = {row["provider"]: row["price_age_days"] for row in report.status}
    for r in report.results:
        age = ages.get(r.name)
        detail = (r.detail or "").replace("|", "\\|")
        lines.append(f"| {r.name} | {r.status} | {r.pages} | {len(r.files)} | {r.bytes / 1e6:.2f} | "
                     f"{r.seconds:.1f} | {'' if age is None else age} | {detail} |")
    return "\n".join(lines) + "\n"
