"""Streamed, atomic downloads over httpx with one retry policy (tenacity).

A download goes to a temporary file beside its target (`.NAME.part-PID`), is fsynced and renamed into
place only when the whole body has arrived: a cut connection or a killed process never leaves a file
that looks complete. The body is hashed (SHA-256) while it streams, never held in memory.

Retried (up to `attempts`, exponential backoff): timeouts, connection errors, bodies cut short, HTTP 429
and 5xx. A 429/503 `Retry-After` is honoured (capped by `max_retry_after_seconds`). Anything else (404,
401, a 200 that is an HTML page instead of the expected JSON/CSV) fails at once.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import tenacity
from pydantic import Field

from tasks.landing_zone import fsync
from tasks.processes import pid_alive
from tasks.settings import Strict

CHUNK_BYTES = 1 << 20
SNIFF_BYTES = 512
# What a body must start with (first non-blank byte) for each expected kind.
EXPECTED_START = {"json": (b"{", b"["), "csv": None}


class HttpPolicy(Strict):
    """config/fetch.toml [http]: timeouts, retries and the bounds of one provider's fetch."""

    connect_timeout_seconds: float = 15.0
    read_timeout_seconds: float = 120.0
    attempts: int = Field(4, ge=1)
    backoff_seconds: float = Field(2.0, ge=0)
    max_backoff_seconds: float = Field(60.0, ge=0)
    max_retry_after_seconds: float = Field(300.0, ge=0)
    max_pages: int = Field(2000, ge=1)
    # Bounds of one provider's fetch: its whole run (every request, retries and waits included), and each
    # download's size on the wire and on disk (after decompression). Exceeding one fails the provider with one
    # line; the prices it had before stay in the warehouse.
    provider_deadline_seconds: float = Field(1800.0, gt=0, allow_inf_nan=False)
    max_download_mb: float = Field(2048.0, gt=0, allow_inf_nan=False)
    max_file_mb: float = Field(4096.0, gt=0, allow_inf_nan=False)

class FetchError(RuntimeError):
    """A request that failed for good (after retries where retrying makes sense). One line, for the summary."""


class TooLarge(FetchError):
    """A response past the size caps (config/fetch.toml [http] max_download_mb, max_file_mb): not retried."""


class DeadlinePassed(FetchError):
    """The provider's fetch ran past its deadline (config/fetch.toml [http] provider_deadline_seconds)."""


# The monotonic time by which the provider being fetched must be done (None: no deadline set).
_deadline: ContextVar[tuple[float, float] | None] = ContextVar("fetch_deadline", default=None)


@contextmanager
def provider_deadline(seconds: float) -> Iterator[None]:
    """Every request inside the block ends by `seconds` from now: a server that trickles or hangs cannot hold
    a provider longer (each request's timeouts shrink to what is left; retries stop at the deadline)."""
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def seconds_left(url: str) -> float | None:
    """Seconds before the deadline; DeadlinePassed when none are left (None: no deadline)."""
    deadline = _deadline.get()
    if deadline is None:
        return None
    left = deadline[0] - time.monotonic()
    if left <= 0:
        raise DeadlinePassed(f"stopped after {deadline[1]:g} s on {url} (config/fetch.toml [http] "
                             "provider_deadline_seconds)")
    return left


class RetryableStatus(FetchError):
    """HTTP 429 or 5xx: worth another attempt, after Retry-After when the server gave one."""

    def __init__(self, url: str, status: int, retry_after: float | None) -> None:
        hint = f", Retry-After {retry_after:g} s" if retry_after is not None else ""
        super().__init__(f"HTTP {status} from {url}{hint}")
        self.status = status
        self.retry_after = retry_after


class WrongFormat(FetchError):
    """A complete response that is not what the adapter reads (e.g. an HTML error page with status 200).
    The body was kept at `path` for a person to look at."""

    def __init__(self, message: str, url: str, path: Path, sha256: str, size_bytes: int) -> None:
        super().__init__(message)
        self.url = url
        self.path = path
        self.sha256 = sha256
        self.size_bytes = size_bytes


@dataclass
class Download:
    """One HTTP response as recorded in raw.downloads."""

    url: str
    http_status: int
    path: Path | None = None  # None for 304 Not Modified
    etag: str | None = None
    last_modified: str | None = None
    content_type: str | None = None
    size_bytes: int = 0
    content_sha256: str | None = None
    downloaded_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    seconds: float = 0.0
    watermark: datetime | None = None  # aws-spot: newest price timestamp in the file
    is_index: bool = False  # a listing that points to the price files (AWS region index), not prices
    assembled: bool = False  # written here from pages already recorded (GCP), not an HTTP response

    @property
    def not_modified(self) -> bool:
        return self.http_status == 304

    @property
    def saved(self) -> Path:
        """The file the response was saved to (a 304 Not Modified saves none: ask `not_modified` first)."""
        if self.path is None:
            raise ValueError(f"{self.url}: {self.http_status} saved no file")
        return self.path


Progress = Callable[[str, int | None, int], None]  # (label, total bytes or None, bytes just received)


def make_client(policy: HttpPolicy) -> httpx.Client:
    timeout = httpx.Timeout(policy.read_timeout_seconds, connect=policy.connect_timeout_seconds)
    return httpx.Client(timeout=timeout, follow_redirects=True, headers={"User-Agent": "gpucost-fetch"})


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3); None if absent/unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def wait_seconds(policy: HttpPolicy, attempt: int, error: BaseException | None) -> float:
    """Before attempt `attempt + 1`: Retry-After when the server said (capped), else exponential backoff; never
    past the provider's deadline (the next attempt then stops at once, saying so)."""
    if isinstance(error, RetryableStatus) and error.retry_after is not None:
        wait = min(error.retry_after, policy.max_retry_after_seconds)
    else:
        wait = min(policy.backoff_seconds * 2 ** (attempt - 1), policy.max_backoff_seconds)
    deadline = _deadline.get()
    return wait if deadline is None else max(0.0, min(wait, deadline[0] - time.monotonic()))


RETRYABLE = (httpx.TransportError, RetryableStatus)


def retrying(policy: HttpPolicy) -> tenacity.Retrying:
    """The one retry policy for every request of a fetch."""
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(policy.attempts),
        wait=lambda state: wait_seconds(
            policy, state.attempt_number, state.outcome.exception() if state.outcome else None
        ),
        retry=tenacity.retry_if_exception_type(RETRYABLE),
        reraise=True,
    )


def describe(error: BaseException) -> str:
    """One line for the summary: what failed, without a traceback."""
    if isinstance(error, FetchError):
        return str(error)
    if isinstance(error, httpx.TimeoutException):
        return f"timed out ({type(error).__name__}) on {_url_of(error)}"
    if isinstance(error, httpx.RemoteProtocolError):
        return f"connection cut before the whole response arrived ({error}) on {_url_of(error)}"
    if isinstance(error, httpx.TransportError):
        return f"{type(error).__name__}: {error} on {_url_of(error)}"
    if isinstance(error, OSError) and error.strerror and error.filename:
        return f"{error.strerror.lower()} writing {error.filename}"
    return f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"


@contextmanager
def naming_the_file(target: Path) -> Iterator[None]:
    """A write that fails says which file it was writing (a full disk's OSError names none): `target`, the file
    the download becomes, not its temporary name."""
    try:
        yield
    except OSError as error:
        if error.filename is not None or error.strerror is None:
            raise
        raise OSError(error.errno, error.strerror, str(target)) from error


def _url_of(error: httpx.TransportError) -> str:
    try:
        return str(error.request.url.copy_with(query=None))
    except RuntimeError:  # no request attached
        return "?"


def part_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.part-{os.getpid()}")


def remove_partial_files(root: Path) -> list[Path]:
    """Leftovers of downloads cut by a killed process (never a completed file, never the part file of a
    fetch still running in another process)."""
    removed = []
    if root.exists():
        for stale in root.rglob(".*.part-*"):
            pid = stale.name.rsplit("-", 1)[-1]
            if pid.isdigit() and int(pid) != os.getpid() and pid_alive(int(pid)):
                continue
            stale.unlink(missing_ok=True)
            removed.append(stale)
    return removed


def _check_format(head: bytes, content_type: str, expect: str, url: str) -> str | None:
    """Why this body is not the expected kind (None if it is)."""
    start = head.lstrip()[:64].lower()
    if "html" in content_type.lower() or start.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return f"HTTP 200 from {url} is an HTML page (Content-Type {content_type or 'none'}), not the expected {expect}"
    if not head.strip():
        return f"HTTP 200 from {url} has an empty body, not the expected {expect}"
    allowed = EXPECTED_START.get(expect)
    if allowed and not start.startswith(allowed):
        return (f"HTTP 200 from {url} (Content-Type {content_type or 'none'}) does not start like {expect} "
                f"(first bytes {head.lstrip()[:20]!r})")
    if expect == "csv" and start.startswith((b"{", b"[", b"<")):
        return f"HTTP 200 from {url} (Content-Type {content_type or 'none'}) is not CSV (starts {head.lstrip()[:20]!r})"
    return None


def check_size(url: str, wire_bytes: int, file_bytes: int, limits: tuple[float, float]) -> None:
    """TooLarge past either cap: bytes received (compressed) or bytes written (decompressed), in MB."""
    max_download_mb, max_file_mb = limits
    if wire_bytes > max_download_mb * 1e6:
        raise TooLarge(f"{url} sent more than {max_download_mb:g} MB (config/fetch.toml [http] max_download_mb); "
                       "nothing of it was kept")
    if file_bytes > max_file_mb * 1e6:
        raise TooLarge(f"{url} expands past {max_file_mb:g} MB ({wire_bytes / 1e6:.1f} MB received; config/fetch.toml "
                       "[http] max_file_mb); nothing of it was kept")


def _attempt(
    client: httpx.Client,
    url: str,
    target: Path,
    *,
    params: Mapping[str, Any] | None,
    headers: Mapping[str, str],
    expect: str,
    quarantine_dir: Path,
    progress: Progress | None,
    limits: tuple[float, float] = (float("inf"), float("inf")),
) -> Download:
    started = datetime.now(UTC)
    left = seconds_left(url)
    if left is None:
        stream = client.stream("GET", url, params=params, headers=headers)
    else:
        stream = client.stream("GET", url, params=params, headers=headers, timeout=httpx.Timeout(
            min(left, client.timeout.read or left), connect=min(left, client.timeout.connect or left)))
    with stream as response:
        shown_url = str(response.request.url)
        if response.status_code == 304:
            return Download(url=shown_url, http_status=304, etag=response.headers.get("etag"),
                            last_modified=response.headers.get("last-modified"), downloaded_at=started)
        if response.status_code == 429 or response.status_code >= 500:
            retry_after = retry_after_seconds(response.headers.get("retry-after"))
            raise RetryableStatus(shown_url, response.status_code, retry_after)
        if response.status_code != 200:
            raise FetchError(f"HTTP {response.status_code} from {shown_url}")
        length = response.headers.get("content-length", "")
        total = int(length) if length.isdigit() else None
        content_type = response.headers.get("content-type", "")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = part_path(target)
        digest = hashlib.sha256()
        size = 0
        head = b""
        try:
            with naming_the_file(target), open(tmp, "wb") as fh:
                # as the bytes arrive (not gathered into CHUNK_BYTES first): a trickle still meets the deadline
                for chunk in response.iter_bytes():
                    if len(head) < SNIFF_BYTES:
                        head += chunk[: SNIFF_BYTES - len(head)]
                    size += len(chunk)
                    check_size(shown_url, response.num_bytes_downloaded, size, limits)
                    seconds_left(shown_url)  # a server that trickles bytes still ends at the deadline
                    fh.write(chunk)
                    digest.update(chunk)
                    if progress:
                        progress(target.name, total, len(chunk))
                fh.flush()
                os.fsync(fh.fileno())
            problem = _check_format(head, content_type, expect, shown_url)
            final = target
            if problem:
                quarantine_dir.mkdir(parents=True, exist_ok=True)
                final = quarantine_dir / target.name
            os.replace(tmp, final)
            fsync(final.parent)
        finally:
            tmp.unlink(missing_ok=True)
        if problem:
            raise WrongFormat(problem, shown_url, final, digest.hexdigest(), size)
        return Download(
            url=shown_url,
            http_status=200,
            path=target,
            etag=response.headers.get("etag"),
            last_modified=response.headers.get("last-modified"),
            content_type=content_type or None,
            size_bytes=size,
            content_sha256=digest.hexdigest(),
            downloaded_at=started,
            seconds=(datetime.now(UTC) - started).total_seconds(),
        )


def write_atomically(target: Path, chunks: Iterable[bytes]) -> tuple[int, str]:
    """Write `chunks` to `target` through a temporary file, fsync, rename; (size, SHA-256)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = part_path(target)
    digest = hashlib.sha256()
    size = 0
    try:
        with naming_the_file(target), open(tmp, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
                digest.update(chunk)
                size += len(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        fsync(target.parent)
    finally:
        tmp.unlink(missing_ok=True)
    return size, digest.hexdigest()


def download(
    client: httpx.Client,
    url: str,
    target: Path,
    policy: HttpPolicy,
    *,
    params: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    validators: Mapping[str, str | None] | None = None,
    expect: str = "json",
    quarantine_dir: Path | None = None,
    progress: Progress | None = None,
) -> Download:
    """GET `url` into `target` (atomically), retried by the policy. With `validators` (etag /
    last_modified of the copy already ingested) the request is conditional: 304 means unchanged."""
    sent = dict(headers or {})
    if validators:
        if etag := validators.get("etag"):
            sent["If-None-Match"] = etag
        if last_modified := validators.get("last_modified"):
            sent["If-Modified-Since"] = last_modified
    for attempt in retrying(policy):
        with attempt:
            return _attempt(
                client, url, target, params=params, headers=sent, expect=expect,
                quarantine_dir=quarantine_dir or target.parent / "quarantined", progress=progress,
                limits=(policy.max_download_mb, policy.max_file_mb),
            )
    raise AssertionError("unreachable: tenacity reraises the last error")
