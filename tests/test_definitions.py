"""Every deployment in prefect.yaml points at a flow that imports and builds (dagster-style definitions test).
The file is read here only to check what it declares; `gpucost serve` leaves reading it to `prefect deploy`."""

from __future__ import annotations

import importlib

import pytest
import yaml
from prefect import Flow

from gpucost.serve import WORK_POOL
from tasks.settings import PROJECT_ROOT

DEPLOYMENTS = yaml.safe_load((PROJECT_ROOT / "prefect.yaml").read_text(encoding="utf-8"))["deployments"]


def load_flow(entrypoint: str) -> object:
    """flows/x.py:name -> flows.x.name"""
    file, _, attribute = entrypoint.partition(":")
    return getattr(importlib.import_module(file.removesuffix(".py").replace("/", ".")), attribute)


def test_prefect_yaml_declares_one_deployment_per_flow():
    assert {d["name"] for d in DEPLOYMENTS} == {"nightly", "ingest_prices", "ingest_telemetry", "train", "publish"}
    # every deployment goes to the pool `gpucost serve` creates and starts a worker for
    assert {d["work_pool"]["name"] for d in DEPLOYMENTS} == {WORK_POOL}
    nightly = next(d for d in DEPLOYMENTS if d["name"] == "nightly")
    assert [(s["cron"], s["timezone"]) for s in nightly["schedules"]] == [("0 2 * * *", "UTC")]
    assert nightly["concurrency_limit"] == {"limit": 1, "collision_strategy": "CANCEL_NEW"}


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=[d["name"] for d in DEPLOYMENTS])
def test_entrypoint_imports_and_builds(deployment):
    flow = load_flow(deployment["entrypoint"])
    assert isinstance(flow, Flow)
    assert flow.name == deployment["name"]  # deployment name = flow name, so `prefect deployment run name/name` works
    flow.validate_parameters({})  # every parameter has a default: the schedule can run it bare
