"""The `fetch_prices` flow: download each provider's current prices, then ingest them through the adapters.

Composition only: tasks.fetch.run holds the work. Each provider is its own task, so one failing (after the
HTTP retries inside it) never stops the others; the summary says which failed, how, and how old its
prices are."""

from __future__ import annotations

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from tasks import config_files
from tasks.fetch.config import check_providers, load_fetch_config
from tasks.fetch.context import ProviderResult
from tasks.fetch.handoff import PriceIngest
from tasks.fetch.run import FetchReport, FetchRun, fetch_provider, finish_run, start_run, summary_markdown
from tasks.summary import outcomes_markdown


@task(name="fetch-provider", cache_policy=NO_CACHE)
def fetch_provider_task(run: FetchRun, provider: str) -> ProviderResult:
    return fetch_provider(run, provider)


@task(name="record-and-ingest-downloads", cache_policy=NO_CACHE)
def finish_run_task(run: FetchRun, results: list[ProviderResult]) -> FetchReport:
    return finish_run(run, results)


@flow(name="fetch_prices", log_prints=True)
def fetch_prices(providers: list[str] | None = None) -> FetchReport:
    """`providers`: fetcher names (default: config/fetch.toml `providers`)."""
    config, settings = load_fetch_config(), config_files.settings()  # read once, passed to the tasks
    resources = config_files.resources(settings)
    chosen = check_providers(list(providers or config.providers))
    ingest = PriceIngest(settings.validation.prices, settings.reference, settings.ingest.limits(resources.home))
    run = start_run(config, chosen, resources, ingest)
    results = [fetch_provider_task(run, provider) for provider in chosen]
    report = finish_run_task(run, results)
    text = summary_markdown(report)
    if report.outcomes:
        text += "\n" + outcomes_markdown("Ingest of the fetched files", report.outcomes)
    create_markdown_artifact(text, key="fetch-prices-summary", description="What was fetched, what failed")
    print(text)
    return report
