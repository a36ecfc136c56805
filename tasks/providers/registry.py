"""The one list of price sources. Adding a provider is one module in tasks/providers/ (see provider.py for
what it declares) and one line here; config/fetch.toml then takes its [NAME] section, `gpucost fetch
--provider NAME` fetches it, GPUCOST_FETCH_<NAME>_URL replaces its URL and its formats are valid in
config/sources.toml and `gpucost ingest prices --format`."""

from __future__ import annotations

from tasks.prices.adapter import Reader
from tasks.providers import aws, aws_spot, azure, gcp, lambda_cloud, owned, price_history, skypilot
from tasks.providers.provider import Provider

# In this order `gpucost fetch` fetches them when config/fetch.toml names none.
PROVIDERS: list[Provider] = [
    azure.PROVIDER,
    aws.PROVIDER,
    aws_spot.PROVIDER,
    gcp.PROVIDER,
    lambda_cloud.PROVIDER,
    skypilot.PROVIDER,
    price_history.PROVIDER,
    owned.PROVIDER,
]


def fetchable() -> list[Provider]:
    """The providers with a fetcher (their sections make up config/fetch.toml)."""
    return [p for p in PROVIDERS if p.fetch is not None]


def provider(name: str) -> Provider:
    return next(p for p in PROVIDERS if p.name == name)


def formats() -> list[str]:
    """Every format name (config/sources.toml `format`, `--format`)."""
    return [fmt for p in PROVIDERS for fmt in p.formats]


def reader(fmt: str) -> Reader:
    """The adapter of a format (tasks/prices/adapter.py)."""
    return next(p.formats[fmt] for p in PROVIDERS if fmt in p.formats)
