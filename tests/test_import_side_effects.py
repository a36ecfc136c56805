"""Issue 26: importing a module reads no file and no environment. Every flow module and the command line are
imported in a fresh process (Prefect too, as a flow imports it) with a state folder that does not exist: our
variables (GPUCOST_, PREFECT_, MLFLOW_) are the same afterwards and nothing is created; entry points configure
Prefect themselves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.settings import PROJECT_ROOT

MODULES = ("flows.nightly", "flows.train", "flows.publish", "flows.ingest_prices", "flows.ingest_telemetry",
           "flows.fetch_prices", "gpucost.cli")

PROBE = """
import importlib, json, os, sys
before = dict(os.environ)
for name in sys.argv[1:]:
    importlib.import_module(name)
after = dict(os.environ)
ours = ("GPUCOST_", "PREFECT_", "MLFLOW_")  # libraries set their own (allocator, OpenMP): not ours to judge
print(json.dumps({k: after.get(k) for k in set(before) | set(after)
                  if k.startswith(ours) and before.get(k) != after.get(k)}))
"""


@pytest.mark.slow
def test_importing_the_flows_and_the_command_line_changes_no_environment_and_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "never-created"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GPUCOST_", "MLFLOW_"))}
    env["GPUCOST_HOME"] = str(home)
    done = subprocess.run([sys.executable, "-c", PROBE, *MODULES], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "{}"
    assert not home.exists()
