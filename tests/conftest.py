"""Shared fixtures: a real DuckDB warehouse per test under a temporary GPUCOST_HOME, the bundled real
samples, and one session-scoped Prefect test harness for the few flow-level tests."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Before anything imports Prefect: keep its state out of the user's home, and make accidental use of
# the engine in plain-function tests fail fast instead of starting a server.
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="gpucost-tests-"))
os.environ["GPUCOST_HOME"] = str(_SESSION_DIR / "home")
os.environ["PREFECT_HOME"] = str(_SESSION_DIR / "prefect")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_ENABLED", "false")
os.environ.setdefault("MPLBACKEND", "Agg")

from tasks.settings import DATA_DIR, configure_prefect_environment  # noqa: E402
from tests import configured  # noqa: E402

# the rest of Prefect's environment, as every entry point sets it (its start-up timeout on a loaded machine)
configure_prefect_environment()

# where the xdist workers say which tests share a costly fixture (pytest_xdist_make_scheduler, below): the
# controller's folder, which the workers inherit
os.environ.setdefault("GPUCOST_TEST_XDIST_GROUPS", str(_SESSION_DIR / "xdist-groups"))
XDIST_GROUPS = Path(os.environ["GPUCOST_TEST_XDIST_GROUPS"])
XDIST_GROUPS.mkdir(exist_ok=True)

SAMPLES = DATA_DIR / "samples"
PRICE_SAMPLES = SAMPLES / "prices"
TELEMETRY_SAMPLES = SAMPLES / "telemetry"
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def gpucost_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own state folder (warehouse, published db, MLflow store)."""
    home = tmp_path / "gpucost-home"
    monkeypatch.setenv("GPUCOST_HOME", str(home))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return home


@pytest.fixture
def con(gpucost_home: Path) -> Iterator[object]:
    """A real, migrated DuckDB warehouse with the shipped reference tables loaded."""
    from tasks.warehouse import warehouse

    with warehouse(configured.resources().warehouse) as connection:
        configured.load_tables(connection)
        yield connection


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One temporary Prefect API for the whole session (~15 s to start): for flow-level tests only."""
    from prefect.testing.utilities import prefect_test_harness

    os.environ["PREFECT_SERVER_EPHEMERAL_ENABLED"] = "true"
    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def night(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> object:
    """One `gpucost run` through the real command line for the whole session (tests/cli/night.py)."""
    from tests.cli.night import run_night

    return run_night(tmp_path_factory.mktemp("cli-night"))


# Test lanes. `make test` runs everything; `make test-fast` (-m "not slow" --forbid-processes) the tests that start no
# process, server or whole night and run no pipeline step end to end (a training registered in MLflow, a published
# night). A test is `slow` when it says so (@pytest.mark.slow), is a `flow` test, uses a fixture below, or is named
# below; in the fast lane a test that starts a process anyway fails, naming the marker.
SLOW_FIXTURES = {
    "prefect_harness",  # a Prefect API server
    "night",  # a whole `gpucost run`
    "states",  # the reliability suite's nights (tests/reliability/conftest.py)
    "base_states",  # its base night alone
    "httpserver",  # the recorded provider responses served on loopback
    "postgres",  # a PostgreSQL cluster (tests/scale/conftest.py)
    "mlflow_server",
    "trained_home",  # a training registered in MLflow (tests/model/conftest.py)
    "scenario",  # an MLflow store with a logged run per trainer (tests/telemetry/test_mlflow_source.py)
}
# node id prefixes: a folder, a module or a test (all its parameters)
SLOW_TESTS = (
    "tests/scale/",  # servers: PostgreSQL, MLflow, Prefect, Dask clusters
    "tests/reliability/",  # the fault-injection suite: nights, and every file damaged every way
    "tests/model/test_training.py",  # candidate sets trained and registered
    "tests/model/test_recovery.py",  # trainings killed and resumed
    "tests/model/test_registry_conventions.py",  # trainings registered in MLflow
    "tests/ranking/test_publish.py",  # published nights
    "tests/ranking/test_parquet_export.py",  # published nights
    "tests/telemetry/test_mlflow_source.py::test_ingested_runs_train_the_model_and_count_in_the_ranking",
    "tests/ingest/test_validation.py::test_duckdb_and_gx_fail_the_same_price_rows",  # GX over every bundled file
    "tests/ingest/test_lifecycle.py::test_a_worker_hands_over_a_large_catalog_within_a_small_memory_cap",
    "tests/ingest/test_lifecycle.py::test_the_row_order_is_kept_again_after_a_stored_file",
    "tests/cli/",  # the command line, as a user runs it
    "tests/prices/test_cli_and_flow.py",  # the command line and the flow
    "tests/telemetry/test_mlflow_source.py::test_cli_refuses_an_unknown_mapping_in_one_line",
    "tests/test_warehouse.py::test_a_second_writer_gets_a_clear_busy_error",  # a second process holds the file
)


def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.getoption("--forbid-processes"):
        # scikit-learn asks joblib for the physical cores once per process, which runs `lscpu`: ask before the tests
        from joblib import cpu_count

        cpu_count(only_physical_cores=True)
        # MLflow's telemetry schema asks platform.processor() at import, which runs `uname -p` once (then cached)
        import platform

        platform.processor()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--forbid-processes", action="store_true",
                     help="fail a test that starts a process (make test-fast: such a test must be marked slow)")


# Worker groups (`make test` runs pytest-xdist with `--dist loadgroup`, pyproject.toml). A session fixture is built
# once per worker that runs a test needing it, so the tests of each costly one run on one worker, which builds it
# once: without this, both workers built the `gpucost run` night, the reliability states and the trained store. The
# first fixture a test needs, in this order, names its group. xdist 3.8 reads the groups from node ids that pytest 9.2
# no longer lets it change (pytest-xdist issue 1386): each worker writes them to a file the scheduler below reads.
SHARED_FIXTURE_GROUPS = (
    ("night", "night"),  # a whole `gpucost run` (~2 min)
    ("base_states", "reliability"),  # the reliability suite's nights (and `states`, built on them)
    ("postgres", "postgres"),  # a PostgreSQL cluster
    ("trained_home", "trained-home"),  # a training registered in MLflow
    ("scenario", "mlflow-scenario"),  # an MLflow store with a logged run per trainer
)


# xdist hands the work out in collection order, one group (or ungrouped test) at a time to whichever worker is
# free (`--no-loadscope-reorder`, pyproject.toml): the longest go first, so that no long one starts last on one
# worker while the other idles. A group or a node id prefix; measured on 2 busy cores, the night built once.
LONGEST_FIRST = (
    "reliability",  # ~70 tests that start commands and kill them: the longest group
    "tests/model/test_training.py::test_better_candidate_set_replaces_a_baseline_champion",  # 2 trainings, 778 runs
    "night",
    "tests/fetch/test_kill_and_flows.py::test_nightly_with_fetching_enabled",  # a whole night with fetching
    "tests/scale/test_prefect_worker.py",
    "tests/model/test_training.py::test_full_candidate_set_champion_beats_baseline",
    "trained-home",
    "postgres",
    "tests/fetch/test_fetch.py::test_every_provider_is_paginated",
    "tests/model/test_flow.py",
    "tests/fetch/test_kill_and_flows.py::test_fetch_command_fetches_every_provider",
    "tests/model/test_recovery.py",
    "tests/scale/test_dask_ingest.py",
)


def shared_fixture_group(item: pytest.Item) -> str | None:
    needs = set(getattr(item, "fixturenames", ()))
    return next((group for fixture, group in SHARED_FIXTURE_GROUPS if fixture in needs), None)


def start_rank(item: pytest.Item) -> int:
    group = shared_fixture_group(item)
    return next((rank for rank, what in enumerate(LONGEST_FIRST) if what == group or item.nodeid.startswith(what)),
                len(LONGEST_FIRST))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if (item.get_closest_marker("flow") or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
                or item.nodeid.startswith(SLOW_TESTS)):
            item.add_marker(pytest.mark.slow)
        group = shared_fixture_group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=start_rank)  # stable: the collection order within a rank
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # before the worker sends its collection, so the scheduler finds the file complete
        groups = {item.nodeid: group for item in items if (group := shared_fixture_group(item))}
        (XDIST_GROUPS / f"{worker}.json").write_text(json.dumps(groups), encoding="utf-8")


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own, which would ignore the groups
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class SharedFixtureScheduling(LoadGroupScheduling):
        """--dist loadgroup with the groups the workers wrote (every worker collects the same tests)."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                self.groups = json.loads(next(XDIST_GROUPS.glob("*.json")).read_text(encoding="utf-8"))
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return SharedFixtureScheduling(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not item.config.getoption("--forbid-processes"):
        return (yield)
    import _posixsubprocess
    import subprocess

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"{item.nodeid} starts a process: mark it @pytest.mark.slow (make test-fast runs "
                             "only tests that start no process, server or night)")

    with pytest.MonkeyPatch.context() as patch:
        # subprocess (its own reference and posix_spawn), multiprocessing (fork, or spawn through fork_exec)
        patch.setattr(subprocess, "_fork_exec", refuse)
        patch.setattr(_posixsubprocess, "fork_exec", refuse)
        for name in ("fork", "posix_spawn", "posix_spawnp"):
            patch.setattr(os, name, refuse)
        return (yield)
