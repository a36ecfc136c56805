"""Optional features without their pip extra (tasks/extras.py): one line naming the extra, exit 2.

A missing module is simulated the way Python itself documents: `sys.modules[name] = None` makes `import name`
raise ModuleNotFoundError and `importlib.util.find_spec(name)` return None. In this process through monkeypatch;
in a `gpucost` subprocess through a sitecustomize.py on PYTHONPATH, which Python imports at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tasks.extras import MissingExtraError, check_command, hint, missing
from tests.cli.night import GPUCOST

AWS_LINE = "the aws-spot price fetch needs boto3, not installed: pip install 'gpucost[aws]'"
DASK_LINE = ('the Dask ingest runner ([ingest.runner] kind = "dask" or GPUCOST_INGEST_RUNNER=dask) needs '
             "prefect-dask and distributed, not installed: pip install 'gpucost[dask]'")
POSTGRES_LINE = ("MLFLOW_TRACKING_URI postgresql+psycopg://... needs psycopg, not installed: "
                 "pip install 'gpucost[postgres]'")


def block(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def test_installed_extras_are_not_missing() -> None:
    # make test installs every extra (requirements.lock is compiled with all of them)
    assert [extra for extra in ("aws", "postgres", "dask") if missing(extra)] == []
    assert hint("aws", "the aws-spot price fetch") is None


def test_a_missing_module_names_its_distribution_and_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    block(monkeypatch, "prefect_dask")
    assert missing("dask") == ["prefect-dask"]  # distributed is still there
    block(monkeypatch, "distributed")
    assert missing("dask") == ["prefect-dask", "distributed"]
    block(monkeypatch, "boto3")
    assert hint("aws", "the aws-spot price fetch") == AWS_LINE


def test_the_dask_runner_and_a_postgres_store_need_their_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    block(monkeypatch, "prefect_dask", "distributed", "psycopg")
    with pytest.raises(MissingExtraError) as refused:
        check_command("ingest", "dask", None)
    assert str(refused.value) == DASK_LINE
    with pytest.raises(MissingExtraError) as refused:
        check_command("train", "threads", "postgresql+psycopg://mlflow@127.0.0.1:5432/mlflow")
    assert str(refused.value) == POSTGRES_LINE
    # what does not use them runs without them
    check_command("ingest", "threads", "postgresql+psycopg://mlflow@127.0.0.1:5432/mlflow")  # no MLflow in ingest
    check_command("train", "dask", None)  # training ingests nothing
    check_command("publish", "threads", "sqlite:///tmp/mlflow.db")
    check_command("train", "threads", "postgresql+psycopg2://mlflow@127.0.0.1/mlflow")  # psycopg2: not our driver


def test_the_aws_spot_fetch_is_skipped_without_boto3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tasks.fetch.config import load_fetch_config
    from tasks.fetch.context import FetchContext, ProviderResult
    from tasks.providers.aws_spot import fetch_aws_spot

    block(monkeypatch, "boto3", "botocore")
    result = ProviderResult("aws-spot")
    config = load_fetch_config()
    with httpx.Client() as client:
        fetch_aws_spot(FetchContext("aws-spot", config.section("aws-spot"), config.base_url("aws-spot"), config.http,
                                    client, tmp_path, datetime.now(UTC), {}, {}), result)
    # in the configured list (`gpucost fetch`, the nightly fetch) it is skipped with the line, the others go on
    assert result.skipped == AWS_LINE and result.files == [] and not any(tmp_path.iterdir())


def gpucost_without(modules: list[str], *args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    site = home.parent / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(f"import sys\nsys.modules.update(dict.fromkeys({modules!r}))\n")
    environment = {**os.environ, "PYTHONPATH": str(site), "GPUCOST_HOME": str(home), **env}
    return subprocess.run([str(GPUCOST), *args], capture_output=True, text=True, env=environment, timeout=120)


def test_the_providers_asked_for_by_name() -> None:
    from gpucost.cli import requested_providers

    argv = ["fetch", "--provider", "aws", "-p", "aws-spot", "--provider=gcp"]
    assert requested_providers(argv) == ["aws", "aws-spot", "gcp"]
    assert requested_providers(["fetch"]) == []


@pytest.mark.slow
def test_fetch_aws_spot_without_the_aws_extra_is_one_line_exit_2(tmp_path: Path) -> None:
    done = gpucost_without(["boto3", "botocore"], "fetch", "--provider", "aws-spot", home=tmp_path / "home")
    assert (done.returncode, done.stderr) == (2, f"error: {AWS_LINE}\n")
    assert not (tmp_path / "home" / "downloads").exists()  # refused before anything was fetched
    # said before any config is read: also where gpucost finds no config/ (`pip install .` outside a checkout)
    (tmp_path / "no-config").mkdir()
    done = gpucost_without(["boto3", "botocore"], "fetch", "-p", "aws-spot", home=tmp_path / "home",
                           GPUCOST_CONFIG_DIR=str(tmp_path / "no-config"))
    assert (done.returncode, done.stderr) == (2, f"error: {AWS_LINE}\n")


@pytest.mark.slow
def test_the_dask_runner_without_the_dask_extra_is_one_line_exit_2(tmp_path: Path) -> None:
    done = gpucost_without(["prefect_dask", "distributed"], "ingest", "prices", home=tmp_path / "home",
                           GPUCOST_INGEST_RUNNER="dask")
    assert (done.returncode, done.stderr) == (2, f"error: {DASK_LINE}\n")
    assert not (tmp_path / "home" / "warehouse.duckdb").exists()


@pytest.mark.slow
def test_an_mlflow_store_on_postgres_without_the_postgres_extra_is_one_line_exit_2(tmp_path: Path) -> None:
    done = gpucost_without(["psycopg"], "train", home=tmp_path / "home",
                           MLFLOW_TRACKING_URI="postgresql+psycopg://mlflow@127.0.0.1:9/mlflow")
    assert (done.returncode, done.stderr) == (2, f"error: {POSTGRES_LINE}\n")
