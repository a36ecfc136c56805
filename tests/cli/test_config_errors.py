"""A hostile configuration through the real command line: one line naming the file (or the environment
variable), the key path and what was wrong, exit 2, before any flow, lock or warehouse exists."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tasks.providers import registry
from tasks.settings import PROJECT_ROOT
from tests.cli.night import GPUCOST


def config_copy(root: Path) -> Path:
    """config/ under `root`, so that run from `root` the files read as config/<name>.toml."""
    return shutil.copytree(PROJECT_ROOT / "config", root / "config")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def gpucost_in(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUCOST_", "PREFECT_", "MLFLOW_"))}
    env |= {"GPUCOST_HOME": str(root / "home"), "GPUCOST_CONFIG_DIR": str(root / "config"), **extra}
    return subprocess.run([str(GPUCOST), *args], capture_output=True, text=True, env=env, cwd=root, timeout=60)


def nothing_started(root: Path) -> bool:
    """No run lock, no warehouse, no published file: the command stopped before any flow."""
    home = root / "home"
    return not any((home / name).exists() for name in ("nightly.lock", "warehouse.duckdb", "published.duckdb"))


HOSTILE = {
    "bad enum value": ("settings.toml", 'kind = "sequential"', 'kind = "dsak"',
                       "config/settings.toml: ingest.runner.kind: must be one of 'threads', 'sequential', 'dask' "
                       "(got 'dsak')"),
    "unknown key": ("settings.toml", "threads_per_worker = 1", "threads_per_worker = 1\nworker = 4",
                    "config/settings.toml: ingest.runner.worker: unknown key (did you mean workers?)"),
    "unknown key, nothing like it": ("sources.toml", 'provider = "lambda"', 'provider = "lambda"\nregion = "us-east-1"',
                                     "config/sources.toml: prices[2].region: unknown key (a typo? the keys here are "
                                     "path, provider, format, options)"),
    "wrong type": ("ranking.toml", "rows_per_batch = 500000", 'rows_per_batch = "500000"',
                   "config/ranking.toml: compute.rows_per_batch: must be an integer (got '500000')"),
    "out of range": ("ranking.toml", "usable_fraction = 0.9", "usable_fraction = 90",
                     "config/ranking.toml: memory.usable_fraction: must be <= 1 (got 90)"),
    "bad entry of a list": ("sources.toml", 'format = "aws-spot"', 'format = "aws_spot"',
                            "config/sources.toml: prices[7].format: must be one of "  # the 7th [[prices]]
                            f"{', '.join(repr(f) for f in registry.formats())} (got 'aws_spot')"),
    "bad member of a table value": ("telemetry.toml", '"fp8-cs" = { family = "fp8", recipe = "current" }',
                                    '"fp8-cs" = { family = "fp8", recipe = "curent" }',
                                    "config/telemetry.toml: precision.fp8-cs.recipe: must be one of 'none', "
                                    "'delayed', 'current', 'tensorwise', 'rowwise', 'blockwise', 'mx', 'nv' "
                                    "(got 'curent')"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_config_file_is_one_line_and_exit_2_before_any_flow(tmp_path: Path, case: str) -> None:
    file, old, new, message = HOSTILE[case]
    edit(config_copy(tmp_path) / file, old, new)
    done = gpucost_in(tmp_path, "run")
    assert (done.returncode, done.stderr, done.stdout) == (2, f"error: {message}\n", "")
    assert nothing_started(tmp_path)


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    (config_copy(tmp_path) / "models.toml").unlink()
    done = gpucost_in(tmp_path, "train")
    assert (done.returncode, done.stderr) == (
        2, "error: config/models.toml: no such file (the configuration folder is config; GPUCOST_CONFIG_DIR "
           "chooses another)\n")
    assert nothing_started(tmp_path)


def test_a_file_that_is_not_toml_is_named_with_its_line(tmp_path: Path) -> None:
    edit(config_copy(tmp_path) / "fetch.toml", "keep_days = 14", "keep_days == 14")
    done = gpucost_in(tmp_path, "ingest", "prices")
    assert done.returncode == 2
    assert done.stderr.startswith("error: config/fetch.toml: not valid TOML (") and "line 12" in done.stderr
    assert done.stderr.count("\n") == 1 and nothing_started(tmp_path)


def test_a_bad_environment_override_names_the_variable(tmp_path: Path) -> None:
    config_copy(tmp_path)
    done = gpucost_in(tmp_path, "ingest", "telemetry", GPUCOST_INGEST_RUNNER="Dask")
    assert (done.returncode, done.stderr) == (
        2, "error: GPUCOST_INGEST_RUNNER (environment, over config/settings.toml): ingest.runner.kind: must be one "
           "of 'threads', 'sequential', 'dask' (got 'Dask')\n")
    workers = gpucost_in(tmp_path, "publish", GPUCOST_INGEST_WORKERS="two")
    assert (workers.returncode, workers.stderr) == (
        2, "error: GPUCOST_INGEST_WORKERS: must be an integer (got 'two')\n")
    assert nothing_started(tmp_path)


def test_workloads_shows_config_text_escaped_never_obeyed(tmp_path: Path) -> None:
    """A workload's description is config text: an escape sequence, a right-to-left override and rich markup in
    it reach `gpucost workloads` as visible escapes and text, not as colour, reordering or bold."""
    config = config_copy(tmp_path)
    text = (config / "workloads.toml").read_text(encoding="utf-8")
    first = text.index('description = "') + len('description = "')
    (config / "workloads.toml").write_text(
        text[:first] + r"[bold]x[/bold] \u001b[31mred \u202eevil " + text[first:], encoding="utf-8")
    done = gpucost_in(tmp_path, "workloads")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    # the description column folds at 100 columns: read it without the table's spacing
    assert "[bold]x[/bold]\\x1b[31mred\\u202eevil" in "".join(done.stdout.split())
