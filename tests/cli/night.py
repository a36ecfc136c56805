"""One nightly run through the real command line (`gpucost run` in a subprocess: real Prefect, DuckDB,
MLflow, the bundled samples, the small candidate set). The session fixture `night` (tests/conftest.py) is
shared by the command-line tests and the README test; tests that change state work on a copy of its home."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tasks.settings import PROJECT_ROOT
from tests.model.conftest import make_config_dir

GPUCOST = Path(sys.executable).with_name("gpucost")


@dataclass(frozen=True)
class Night:
    home: Path
    config: Path
    env: dict[str, str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def copy_home(self, target: Path) -> Path:
        shutil.copytree(self.home, target, ignore=shutil.ignore_patterns("nightly.lock", "prefect"))
        return target


def gpucost(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`gpucost ARGS` to completion. A run still going after `timeout` is made to print every thread's stack
    (faulthandler on SIGABRT) before it is stopped, so a stall says where it stalled."""
    command = [str(GPUCOST), *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**env, "PYTHONFAULTHANDLER": "1"}, cwd=PROJECT_ROOT) as child:
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGABRT)
            try:
                stdout, stderr = child.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                stdout, stderr = child.communicate()
            raise AssertionError(f"{' '.join(args)}: still running after {timeout:.0f} s; its output, then "
                                 f"its threads' stacks:\n{stdout[-4000:]}\n{stderr[-20000:]}") from None
    return subprocess.CompletedProcess(command, child.returncode, stdout, stderr)


def run_night(root: Path) -> Night:
    """`gpucost run` on the bundled samples with the shipped candidate set (so what `make run` and the README
    show), permutation importance repeated once, against the session's Prefect API."""
    from prefect.settings import PREFECT_API_URL

    shipped = (PROJECT_ROOT / "config" / "models.toml").read_text(encoding="utf-8")
    config = make_config_dir(root, shipped[shipped.index("[[candidates]]"):])
    env = {**os.environ, "GPUCOST_HOME": str(root / "home"), "GPUCOST_CONFIG_DIR": str(config),
           "PREFECT_API_URL": str(PREFECT_API_URL.value()), "COLUMNS": "100"}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("PREFECT_LOGGING_LEVEL", None)
    started = time.perf_counter()
    # the shipped five candidates on 778 runs: ~4 min on 2 busy cores, more on a machine shared with other work
    done = gpucost("run", env=env, timeout=900)
    return Night(root / "home", config, env, done.returncode, done.stdout, done.stderr,
                 time.perf_counter() - started)


