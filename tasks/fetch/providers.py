"""One fetcher per provider API. Each downloads the provider's current prices in its native format into
`downloads/<provider>/<UTC date>/` and says which adapter reads each file; none of them parses prices.

A fetcher appends to its ProviderResult as it goes, so what arrived before a failure is kept (and
ingested) even when a later page or region fails.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx

from tasks.extras import hint
from tasks.fetch.config import FetchConfig
from tasks.fetch.http import Download, FetchError, Progress, WrongFormat, describe, download, write_atomically


@dataclass(frozen=True)
class FetchedFile:
    """A downloaded file and the adapter that reads it (what tasks.fetch.handoff ingests)."""

    path: Path
    provider: str  # the provider the prices are for (aws, azure, gcp, lambda, ...)
    format: str  # adapter name, as in config/sources.toml
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProviderResult:
    name: str  # fetcher: azure | aws | aws-spot | gcp | lambda | skypilot
    downloads: list[Download] = field(default_factory=list)
    files: list[FetchedFile] = field(default_factory=list)
    quarantined: list[WrongFormat] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0
    files_rejected: int = 0  # handed-off files the adapter quarantined whole (set after the hand-off)

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
    config: FetchConfig
    client: httpx.Client
    downloads_root: Path  # $GPUCOST_HOME/downloads
    fetched_at: datetime  # UTC start of the run
    validators: dict[str, dict[str, Any]]  # url -> newest download's etag/last_modified/path/content_in_warehouse
    spot_watermarks: dict[str, datetime]
    progress: Progress | None = None

    def directory(self, provider: str) -> Path:
        return self.downloads_root / provider / self.fetched_at.strftime("%Y-%m-%d")

    def get(self, result: ProviderResult, url: str, target: Path, *, expect: str = "json",
            conditional: bool = False, **kwargs: Any) -> Download:
        """GET into target; conditional when the warehouse already has this URL's last content."""
        known = self.validators.get(url) if conditional else None
        validators = known if known and known.get("content_in_warehouse") else None
        try:
            got = download(self.client, url, target, self.config.http, validators=validators, expect=expect,
                           progress=self.progress, **kwargs)
        except WrongFormat as error:
            result.quarantined.append(error)
            raise
        result.downloads.append(got)
        return got


Fetcher = Callable[[FetchContext, ProviderResult], None]


def _json_field(path: Path, key: str) -> Any:
    """One top-level field of a downloaded page (the pagination link; prices are the adapters' business)."""
    with open(path, encoding="utf-8") as fh:
        document = json.load(fh)
    if not isinstance(document, dict):
        raise FetchError(f"{path.name}: expected a JSON object with {key!r}")
    return document.get(key)


def fetch_azure(ctx: FetchContext, result: ProviderResult) -> None:
    """Retail Prices API: the configured $filter, then every NextPageLink the server returns."""
    url: str | None = ctx.config.base_url("azure")
    params: dict[str, str] | None = {"$filter": ctx.config.azure.filter}
    directory = ctx.directory("azure")
    seen: set[str] = set()
    page = 0
    while url:
        page += 1
        if page > ctx.config.http.max_pages:
            raise FetchError(f"more than {ctx.config.http.max_pages} pages ([http] max_pages); stopped")
        got = ctx.get(result, url, directory / f"retail-prices-page-{page:04d}.json", params=params)
        result.files.append(FetchedFile(got.path, "azure", "azure-retail"))
        link = _json_field(got.path, "NextPageLink")
        if link and link in seen:
            raise FetchError(f"NextPageLink repeats an earlier page ({link}); stopped after page {page}")
        seen.add(link or "")
        url, params = link, None


def fetch_gcp(ctx: FetchContext, result: ProviderResult) -> None:
    """Cloud Billing Catalog SKUs: every page (nextPageToken), then ONE file of all pages for the adapter,
    which composes a VM's price from GPU, core and RAM SKUs that may sit on different pages."""
    cfg = ctx.config.gcp
    key = os.environ.get(cfg.api_key_env, "").strip()
    if not key:
        result.skipped = f"no API key: set {cfg.api_key_env} (Cloud Billing Catalog API key)"
        return
    url = ctx.config.base_url("gcp")
    directory = ctx.directory("gcp")
    params: dict[str, Any] = {"pageSize": cfg.page_size, "currencyCode": cfg.currency}
    pages: list[Path] = []
    tokens: set[str] = set()
    while True:
        if len(pages) >= ctx.config.http.max_pages:
            raise FetchError(f"more than {ctx.config.http.max_pages} pages ([http] max_pages); stopped")
        got = ctx.get(result, url, directory / f"skus-page-{len(pages) + 1:04d}.json", params=params,
                      headers={"X-Goog-Api-Key": key})
        pages.append(got.path)
        token = _json_field(got.path, "nextPageToken")
        if not token:
            break
        if token in tokens:
            raise FetchError(f"nextPageToken repeats ({token[:20]}…); stopped after page {len(pages)}")
        tokens.add(token)
        params = {**params, "pageToken": token}
    combined = directory / "skus.json"
    size, sha = write_atomically(combined, _json_list_of(pages))
    result.downloads.append(Download(
        url=f"{url} ({len(pages)} pages joined)", http_status=200, path=combined, content_type="application/json",
        size_bytes=size, content_sha256=sha, assembled=True,
    ))
    result.files.append(FetchedFile(combined, "gcp", "gcp-billing"))


def _json_list_of(pages: list[Path]) -> Iterator[bytes]:
    """`[page1,page2,...]` streamed from the page files (the adapter reads a list of pages)."""
    yield b"["
    for index, page in enumerate(pages):
        if index:
            yield b","
        with open(page, "rb") as fh:
            yield from iter(lambda: fh.read(1 << 20), b"")
    yield b"]"


def fetch_aws(ctx: FetchContext, result: ProviderResult) -> None:
    """Price List bulk API: region_index.json, then each configured region's current EC2 offer file.
    Both conditional (ETag / If-Modified-Since): an unchanged offer is not downloaded again."""
    cfg = ctx.config.aws
    index_url = ctx.config.base_url("aws")
    directory = ctx.directory("aws")
    known = ctx.validators.get(index_url) or {}
    previous = Path(known["path"]) if known.get("path") else None
    index = download(ctx.client, index_url, directory / "region_index.json", ctx.config.http, expect="json",
                     validators=known if previous and previous.exists() else None, progress=ctx.progress)
    index.is_index = True
    result.downloads.append(index)
    index_path = previous if index.not_modified else index.path
    regions: dict[str, Any] = _json_field(index_path, "regions") or {}
    wanted = cfg.regions or sorted(regions)
    missing = [r for r in wanted if r not in regions]
    if missing:
        result.errors.append(f"not in the region index: {', '.join(missing)}")
    for region in (r for r in wanted if r in regions):
        offer_url = urljoin(index_url, regions[region]["currentVersionUrl"])
        if cfg.offer_format == "csv":
            offer_url = offer_url.removesuffix(".json") + ".csv"
        target = directory / region / f"index.{cfg.offer_format}"
        try:
            got = ctx.get(result, offer_url, target, expect=cfg.offer_format, conditional=True)
        except (FetchError, httpx.TransportError) as error:
            result.errors.append(f"{region}: {describe(error)}")
            continue
        if not got.not_modified:
            result.files.append(FetchedFile(got.path, "aws", "aws-offer"))


def fetch_lambda(ctx: FetchContext, result: ProviderResult) -> None:
    """Lambda Cloud instance-types API: one JSON document (no paging), with the API key as a bearer token."""
    cfg = ctx.config.lambda_
    key = os.environ.get(cfg.api_key_env, "").strip()
    if not key:
        result.skipped = f"no API key: set {cfg.api_key_env} (Lambda Cloud API key)"
        return
    got = ctx.get(result, ctx.config.base_url("lambda"), ctx.directory("lambda") / "instance-types.json",
                  headers={"Authorization": f"Bearer {key}"})
    result.files.append(FetchedFile(got.path, "lambda", "lambda-api", {"regions": cfg.regions}))


def fetch_skypilot(ctx: FetchContext, result: ProviderResult) -> None:
    """SkyPilot catalogs: `<version>/<cloud>/vms.csv` for each configured cloud, conditional GET."""
    base = ctx.config.base_url("skypilot").rstrip("/")
    directory = ctx.directory("skypilot")
    for cloud, version in ctx.config.skypilot.clouds.items():
        url = f"{base}/{version}/{cloud}/vms.csv"
        try:
            got = ctx.get(result, url, directory / f"{cloud}-{version}-vms.csv", expect="csv", conditional=True)
        except (FetchError, httpx.TransportError) as error:
            result.errors.append(f"{cloud}: {describe(error)}")
            continue
        if not got.not_modified:
            result.files.append(FetchedFile(got.path, cloud, "skypilot"))


def fetch_aws_spot(ctx: FetchContext, result: ProviderResult) -> None:
    """DescribeSpotPriceHistory through boto3 (its own retries and paging), GPU families only, since the
    newest price already in the warehouse; skipped when no AWS credentials are configured, or without boto3
    (the aws extra)."""
    without_boto3 = hint("aws", "the aws-spot price fetch")
    if without_boto3:
        result.skipped = without_boto3
        return
    import boto3
    from botocore.config import Config

    cfg = ctx.config.aws_spot
    session = boto3.session.Session()
    if session.get_credentials() is None:
        result.skipped = ("no AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE or an "
                          "instance role)")
        return
    endpoint = ctx.config.base_url("aws-spot") or None
    policy = ctx.config.http
    botocore_config = Config(
        retries={"mode": "standard", "max_attempts": policy.attempts},
        connect_timeout=policy.connect_timeout_seconds,
        read_timeout=policy.read_timeout_seconds,
    )
    directory = ctx.directory("aws-spot")
    for region in cfg.regions:
        key = f"{endpoint or 'ec2'}#DescribeSpotPriceHistory?region={region}"
        since = ctx.spot_watermarks.get(key)
        start = since or ctx.fetched_at - timedelta(hours=cfg.first_lookback_hours)
        started = datetime.now(UTC)
        try:
            client = session.client("ec2", region_name=region, endpoint_url=endpoint, config=botocore_config)
            rows: list[dict[str, Any]] = []
            pages = client.get_paginator("describe_spot_price_history").paginate(
                StartTime=start,
                ProductDescriptions=cfg.product_descriptions,
                Filters=[{"Name": "instance-type", "Values": [f"{f}.*" for f in cfg.instance_families]}],
            )
            for page in pages:
                rows.extend(page.get("SpotPriceHistory", []))
        except Exception as error:  # noqa: BLE001 - botocore's errors are many; one line, the next region goes on
            result.errors.append(f"{region}: {type(error).__name__}: {' '.join(str(error).split())[:300]}")
            continue
        # The API also returns the price in effect at StartTime, which the last fetch already has.
        new = [r for r in rows if since is None or r["Timestamp"] > since]
        if not new:
            continue
        target = directory / f"spot-{region}-{ctx.fetched_at:%H%M%S}.json"
        body = json.dumps({"SpotPriceHistory": [_spot_row(r) for r in new]}, indent=0).encode()
        size, sha = write_atomically(target, [body])
        result.downloads.append(Download(
            url=key, http_status=200, path=target, content_type="application/json", size_bytes=size,
            content_sha256=sha, downloaded_at=started, seconds=(datetime.now(UTC) - started).total_seconds(),
            watermark=max(r["Timestamp"] for r in new),
        ))
        result.files.append(FetchedFile(target, "aws", "aws-spot"))


def _spot_row(row: dict[str, Any]) -> dict[str, Any]:
    """boto3's row as `aws ec2 describe-spot-price-history` prints it (the adapter's JSON input)."""
    out = dict(row)
    out["Timestamp"] = row["Timestamp"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    return out


FETCHERS: dict[str, Fetcher] = {
    "azure": fetch_azure,
    "aws": fetch_aws,
    "aws-spot": fetch_aws_spot,
    "gcp": fetch_gcp,
    "lambda": fetch_lambda,
    "skypilot": fetch_skypilot,
}
