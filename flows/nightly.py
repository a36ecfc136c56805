"""The `nightly` flow: [fetch prices] -> ingest prices -> ingest telemetry -> train -> publish.

Fetching runs first only when config/fetch.toml says `enabled = true` (offline by default).

A failing step before publish is reported and skipped, not fatal: broken price files are quarantined
per file by ingest_prices itself; a failed training keeps yesterday's champion; publish always runs.
A lock file (the state folder's nightly.lock) keeps two nightly runs from overlapping."""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from prefect.client.schemas.objects import State

from flows.fetch_prices import fetch_prices
from flows.ingest_prices import ingest_prices
from flows.ingest_telemetry import ingest_telemetry
from flows.publish import publish
from flows.train import train
from tasks import config_files
from tasks.fetch.config import load_fetch_config
from tasks.fetch.run import FetchReport
from tasks.processes import run_lock
from tasks.settings import config_dir
from tasks.stores import mlflow_problem
from tasks.warehouse import check_warehouse_free

# What each step's failure means for tonight's publish.
CONSEQUENCES = {
    "fetch_prices": "tonight's ranking uses the last prices fetched or ingested",
    "ingest_prices": "tonight's ranking uses the prices already in the warehouse",
    "ingest_telemetry": "the model is trained on the telemetry already in the warehouse",
    "train": "yesterday's champion model is kept and used",
}


def _failure_message(state: object) -> str:
    message = getattr(state, "message", None) or ""
    # all lines, folded into one: wrapped errors (e.g. MLflow's around SQLite) give the cause on a later line
    return " ".join(message.split())[:300] if message else type(state).__name__


def fetch_enabled() -> bool:
    """config/fetch.toml says so; a config folder without that file (made before fetching existed) is offline."""

    return (config_dir() / "fetch.toml").exists() and load_fetch_config().enabled


def _fetch_outcome(state: State[FetchReport]) -> str:
    if not state.is_completed():
        return f"skipped ({_failure_message(state)}): {CONSEQUENCES['fetch_prices']}"
    report = state.result()
    failed = [f"{r.name} {r.status} ({r.detail})" for r in report.failed()]
    if failed:
        return f"completed; {'; '.join(failed)}: their last good prices are kept"
    return "completed"


@flow(name="nightly", log_prints=True)
def nightly() -> dict[str, str]:
    """Returns each step's outcome ('completed' or 'skipped: ...')."""
    steps: dict[str, str] = {}
    resources = config_files.resources()  # the steps are flows of their own: each loads its sections
    with run_lock(resources.run_lock):
        check_warehouse_free(resources.warehouse)
        if fetch_enabled():
            state = fetch_prices(return_state=True)
            steps["fetch_prices"] = _fetch_outcome(state)
        for name, step in (("ingest_prices", ingest_prices), ("ingest_telemetry", ingest_telemetry), ("train", train)):
            damaged = mlflow_problem(resources.tracking_uri) if name == "train" else None
            if damaged is not None:  # degrade step by step: no training, publish still runs
                steps[name] = f"skipped ({damaged.message})"
                continue
            step_state = step(return_state=True)
            if step_state.is_completed():
                steps[name] = "completed"
            else:
                steps[name] = f"skipped ({_failure_message(step_state)}): {CONSEQUENCES[name]}"
        outcome = publish()
        steps["publish"] = (
            f"completed: {outcome.ranking.ranked} ranked of {outcome.ranking.rows} rows, "
            f"model {outcome.ranking.model_version or 'none'}"
        )
        steps.update({f"warning {i + 1}": w for i, w in enumerate(outcome.ranking.warnings)})
    lines = ["# Nightly run", "", "| step | outcome |", "|---|---|"]
    lines += [f"| {name} | {result} |" for name, result in steps.items()]
    summary = "\n".join(lines) + "\n"
    create_markdown_artifact(summary, key="nightly-summary", description="What ran and what was skipped")
    print(summary)
    return steps
