"""The `nightly` flow: ingest prices -> ingest telemetry -> train -> publish."""

from __future__ import annotations

from prefect import flow

from flows.ingest_prices import ingest_prices


@flow(name="nightly", log_prints=True)
def nightly() -> None:
    ingest_prices()
