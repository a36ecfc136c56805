"""One training in its own process (what a team member's `gpucost train` does), on a saved feature table:
`python -m tests.scale.train_process FEATURES.parquet GO_FILE`. The heavy libraries are imported first, then the
process waits for GO_FILE to exist before it starts training (so a test decides when each training begins).
MLFLOW_TRACKING_URI and GPUCOST_CONFIG_DIR come from the environment. Last line: "registered VERSION ALIAS"."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import mlflow  # noqa: F401 - imported before the start signal
import polars as pl
import sklearn  # noqa: F401

from tasks import config_files
from tests import configured


def main() -> None:
    features, go = pl.read_parquet(sys.argv[1]), Path(sys.argv[2])
    deadline = time.monotonic() + 300
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"no start signal ({go}) within 300 s")
        time.sleep(0.05)
    # the training module is imported now, as a `gpucost train` started at this moment would import it
    from tasks.model.training import train_and_register

    outcome = train_and_register(features, config_files.models(), configured.resources(), configured.contract())
    print(f"registered {outcome.version} {outcome.alias}", flush=True)


if __name__ == "__main__":
    main()
