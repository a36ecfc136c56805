"""Every deployment in prefect.yaml points at a flow that imports and builds (dagster-style definitions test)."""

from __future__ import annotations

import pytest
from prefect import Flow

from flows.serve import read_deployments

SPECS = read_deployments()


def test_prefect_yaml_declares_one_deployment_per_flow():
    assert {s.name for s in SPECS} == {"nightly", "ingest_prices", "ingest_telemetry", "train", "publish"}
    nightly = next(s for s in SPECS if s.name == "nightly")
    assert (nightly.cron, nightly.timezone) == ("0 2 * * *", "UTC")


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_entrypoint_imports_and_builds(spec):
    flow = spec.load_flow()
    assert isinstance(flow, Flow)
    assert flow.name == spec.name  # deployment name = flow name, so `prefect deployment run name/name` works
    flow.validate_parameters({})  # every parameter has a default: the schedule can run it bare


def test_nightly_cron_can_be_overridden(monkeypatch):
    monkeypatch.setenv("GPUCOST_NIGHTLY_CRON", "30 3 * * 1-5")
    monkeypatch.setenv("GPUCOST_NIGHTLY_TIMEZONE", "Europe/Paris")
    nightly = next(s for s in read_deployments() if s.name == "nightly")
    assert (nightly.cron, nightly.timezone) == ("30 3 * * 1-5", "Europe/Paris")
