"""One pipeline step as plain function calls, with pinned timestamps, for the crash tests.

Run in a child process: `python -m tests.reliability.driver STEP [--pause-at CHECKPOINT]` with
GPUCOST_HOME (and GPUCOST_CONFIG_DIR) in the environment. With `--pause-at`, the step prints
`PAUSED <checkpoint>` on stdout when it reaches that point and sleeps there, so that the test can SIGKILL
it at exactly that point. The checkpoints wrap real functions of tasks/ from the outside (nothing in the
product knows about them). The session fixture calls `run_step` in-process, without a pause, to build
the reference states that an interrupted-then-rerun step must reproduce.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from tasks import config_files
from tasks.settings import DATA_DIR
from tests import configured

PRICES = DATA_DIR / "samples" / "prices"
TELEMETRY = DATA_DIR / "samples" / "telemetry" / "published_benchmarks.csv"
INGESTED_AT = datetime(2026, 1, 5, 1, 0, tzinfo=UTC)  # every ingest of these tests "happens" at this time
FIRST_NIGHT = date(2026, 1, 5)
NEXT_NIGHT = date(2026, 1, 6)

# The base state holds these (prices A, B) ...
BASE_PRICE_FILES = (
    ("skypilot_v8_lambda_gpu.csv", "lambda", "skypilot"),
    ("aws_spot_price_history_2022-05-31_gpu_az_ids.tsv", "aws", "aws-spot"),
)
# ... and the price step under test adds these (C, D).
NEW_PRICE_FILES = (
    ("skypilot_v8_aws_gpu_subset.csv", "aws", "skypilot"),
    ("gcp_billing_catalog_skus_page_excerpt_opencost.json", "gcp", "gcp-billing"),
)

PAUSE_SECONDS = 300


def pause(checkpoint: str) -> None:
    print(f"PAUSED {checkpoint}", flush=True)
    time.sleep(PAUSE_SECONDS)
    raise SystemExit(f"not killed at {checkpoint}")


def pause_before(owner: Any, attribute: str, checkpoint: str, call: int = 1,
                 when: Callable[..., bool] | None = None) -> None:
    """Replace owner.attribute so that its `call`-th matching call pauses before running."""
    real = getattr(owner, attribute)
    seen = {"n": 0}

    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if when is None or when(*args, **kwargs):
            seen["n"] += 1
            if seen["n"] == call:
                pause(checkpoint)
        return real(*args, **kwargs)

    setattr(owner, attribute, wrapper)


def pause_after(owner: Any, attribute: str, checkpoint: str) -> None:
    """Replace owner.attribute so that its first call pauses after it returned."""
    real = getattr(owner, attribute)

    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        pause(checkpoint)
        return result

    setattr(owner, attribute, wrapper)


def install_checkpoint(checkpoint: str) -> None:
    """Where each checkpoint is (see CHECKPOINTS)."""
    if checkpoint == "price-file-2-uncommitted":
        import tasks.ingest.lifecycle as lifecycle

        # record_file is the last statement of a file's transaction: raw, core and quarantine rows are written
        pause_before(lifecycle, "record_file", checkpoint, call=2)
    elif checkpoint == "telemetry-uncommitted":
        import tasks.ingest.lifecycle as lifecycle

        # after the runs were archived, deleted and re-inserted, before the commit
        pause_before(lifecycle, "record_file", checkpoint)
    elif checkpoint == "train-candidate-logged":
        import tasks.model.registry as registry

        pause_after(registry, "log_candidate_run", checkpoint)
    elif checkpoint == "train-version-registered":
        import mlflow.pyfunc

        # the new version exists in the registry; its tags and alias are not set yet
        pause_after(mlflow.pyfunc, "log_model", checkpoint)
    elif checkpoint == "publish-mid-build":
        import tasks.publishing.database as database

        pause_before(database, "execute", checkpoint, when=lambda con, name, *a, **k: name == "publish/price_history")
    elif checkpoint == "publish-before-swap":
        # the new file is complete under its temporary name; the rename has not happened
        pause_before(os, "replace", checkpoint, when=lambda source, target, *a, **k: str(source).endswith(".tmp"))
    elif checkpoint not in ("price-file-2-start", "telemetry-before-features"):
        raise SystemExit(f"unknown checkpoint {checkpoint}")


CHECKPOINTS = {
    "prices": ("price-file-2-start", "price-file-2-uncommitted"),
    "telemetry": ("telemetry-uncommitted", "telemetry-before-features"),
    "train": ("train-candidate-logged", "train-version-registered"),
    "publish": ("publish-mid-build", "publish-before-swap"),
}


def ingest_prices(files: tuple[tuple[str, str, str], ...], pause_at: str | None = None) -> list[Any]:
    from tasks.prices.ingest import PriceSource, ingest_price_file
    from tasks.warehouse import warehouse

    outcomes = []
    with warehouse(configured.resources().warehouse) as con:
        configured.load_tables(con)
        aliases = configured.aliases()
        for index, (name, provider, fmt) in enumerate(files, start=1):
            if pause_at == f"price-file-{index}-start":
                pause(pause_at)
            outcomes.append(ingest_price_file(con, PriceSource(PRICES / name, provider, fmt), aliases, INGESTED_AT,
                                              **configured.price_options()))
    return outcomes


def ingest_telemetry(path: Path, pause_at: str | None = None) -> Any:
    from tasks.contract.features import refresh_feature_table
    from tasks.telemetry.ingest import ingest_telemetry_file
    from tasks.warehouse import warehouse

    with warehouse(configured.resources().warehouse) as con:
        configured.load_tables(con)
        outcome = ingest_telemetry_file(con, path, configured.aliases(), INGESTED_AT,
                                        **configured.telemetry_options(vocabulary=configured.vocabulary()))
        if pause_at == "telemetry-before-features":
            pause(pause_at)
        refresh_feature_table(con, configured.reference())
    return outcome


def train() -> Any:
    from tasks.model.training import read_training_features, train_and_register
    from tasks.warehouse import warehouse

    with warehouse(configured.resources().warehouse) as con:
        features = read_training_features(con)
    return train_and_register(features, config_files.models(), configured.resources(), configured.contract())


def publish(night: date) -> Any:
    from tasks.model.predict import load_champion
    from tasks.publishing.night import publish_night
    from tasks.warehouse import warehouse

    champion = load_champion(configured.resources().tracking_uri, configured.contract())
    with warehouse(configured.resources().warehouse) as con:
        return publish_night(con, champion, night, datetime.combine(night, datetime.min.time(), UTC),
                             configured.resources(), **configured.night())


def run_step(step: str, telemetry_file: Path | None = None, pause_at: str | None = None) -> Any:
    if pause_at:
        install_checkpoint(pause_at)
    if step == "prices":
        return ingest_prices(NEW_PRICE_FILES, pause_at)
    if step == "telemetry":
        return ingest_telemetry(telemetry_file or TELEMETRY, pause_at)
    if step == "train":
        return train()
    if step == "publish":
        return publish(NEXT_NIGHT)
    raise SystemExit(f"unknown step {step}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=sorted(CHECKPOINTS))
    parser.add_argument("--pause-at")
    parser.add_argument("--telemetry-file", type=Path)
    args = parser.parse_args()
    run_step(args.step, args.telemetry_file, args.pause_at)
    print("DONE", flush=True)


if __name__ == "__main__":
    sys.exit(main())
