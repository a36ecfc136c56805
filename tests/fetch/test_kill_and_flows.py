"""A fetch killed mid-download, the `gpucost fetch` command, and the nightly flow with fetching enabled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from tasks.fetch.config import load_fetch_config
from tasks.fetch.run import fetch_once
from tasks.settings import PROJECT_ROOT
from tasks.warehouse import warehouse
from tests import configured
from tests.fetch import replay

CHILD = ("from tasks.fetch.config import load_fetch_config; from tasks.fetch.run import fetch_once; "
         "from tests import configured; "
         "fetch_once(load_fetch_config(), ['skypilot'], configured.resources(), configured.price_ingest())")


def test_a_fetch_killed_mid_download_leaves_nothing_registered_and_the_next_run_starts_clean(
    providers: replay.Replay, httpserver: HTTPServer, gpucost_home: Path
) -> None:
    body = (replay.PRICE_SAMPLES / "skypilot_v8_aws_gpu_subset.csv").read_bytes()
    release = threading.Event()

    def stalls_after_the_first_chunk(_request: object) -> Response:
        def chunks():
            yield body[:65536]
            release.wait(30)  # until the test has killed the fetch
            yield body[65536:]

        return Response(chunks(), headers={"Content-Length": str(len(body))}, content_type="text/csv",
                        direct_passthrough=True)

    httpserver.expect_oneshot_request(f"{replay.SKYPILOT_BASE}/v8/aws/vms.csv").respond_with_handler(
        stalls_after_the_first_chunk)
    child = subprocess.Popen([sys.executable, "-c", CHILD], cwd=PROJECT_ROOT, env={**os.environ, "CI": "true"})
    day = gpucost_home / "downloads" / "skypilot"
    try:
        deadline = time.monotonic() + 60
        while not list(day.rglob(".aws-v8-vms.csv.part-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        parts = list(day.rglob(".aws-v8-vms.csv.part-*"))
        assert parts, "the child never started the download"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        release.set()
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    assert not list(day.rglob("aws-v8-vms.csv"))  # never renamed into place: the file does not look complete

    report = fetch_once(load_fetch_config(), ["skypilot"], configured.resources(), configured.price_ingest())
    assert not list((gpucost_home / "downloads").rglob(".*part*"))  # the leftover was removed first
    assert report.results[0].status == "ok" and len(report.results[0].files) == 3
    with warehouse(configured.resources().warehouse) as con:
        downloaded = con.execute("select path, size_bytes from raw.downloads order by path").fetchall()
    assert len(downloaded) == 3  # only the clean run's downloads are registered
    aws = next(size for path, size in downloaded if path.endswith("aws-v8-vms.csv"))
    assert aws == len(body) == Path(next(p for p, _ in downloaded if p.endswith("aws-v8-vms.csv"))).stat().st_size


# The command's function is called directly, its stderr console swapped for a buffer (click's test runner
# or capfd would leave Prefect's log handler writing to a closed stream for the rest of the session).


def test_fetch_command_rejects_an_unknown_provider_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import typer
    from rich.console import Console

    import gpucost.cli
    from gpucost.cli import fetch

    stderr = io.StringIO()
    monkeypatch.setattr(gpucost.cli, "err", Console(file=stderr, width=200))
    with pytest.raises(typer.Exit) as exited:
        fetch(provider=["oracle"])
    assert exited.value.exit_code == 2
    err = stderr.getvalue()
    assert "unknown provider oracle" in err and len(err.strip().splitlines()) == 1


@pytest.mark.flow
def test_fetch_command_fetches_every_provider_with_nightly_fetching_disabled(
    prefect_harness: None, providers: replay.Replay, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    import gpucost.cli
    from gpucost.cli import fetch

    stderr = io.StringIO()  # the command's stderr console (capfd would leave Prefect's log handler on a closed file)
    monkeypatch.setattr(gpucost.cli, "err", Console(file=stderr, width=200))
    assert load_fetch_config().enabled is False
    fetch(provider=None)  # every configured provider; returns (exit status 0): none failed
    with warehouse(configured.resources().warehouse) as con:
        statuses = dict(con.execute("select provider, status from raw.fetch_attempts").fetchall())
        per_format = dict(con.execute("select format, count(*) from raw.ingested_files group by 1").fetchall())
    assert statuses == {p: "ok" for p in ("azure", "aws", "aws-spot", "gcp", "skypilot")}
    # 3 Azure pages, 2 AWS region offers, 1 spot history, 1 file of both GCP pages, 3 SkyPilot catalogs
    assert per_format == {"azure-retail": 3, "aws-offer": 2, "aws-spot": 1, "gcp-billing": 1, "skypilot": 3}
    assert stderr.getvalue() == ""

    monkeypatch.delenv("GPUCOST_GCP_API_KEY")
    fetch(provider=["gcp"])
    assert stderr.getvalue().strip() == (
        "gcp: skipped: no API key: set GPUCOST_GCP_API_KEY (Cloud Billing Catalog API key)")


@pytest.mark.flow
def test_nightly_with_fetching_enabled_puts_fetched_prices_in_core_with_the_fetch_time(
    prefect_harness: None, providers: replay.Replay, gpucost_home: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flows.nightly import nightly
    from tests.model.conftest import BASELINE_ONLY, make_config_dir

    # the constant-MFU baseline alone: this test is about the fetched prices, any champion ranks them
    config = make_config_dir(tmp_path / "nightly", BASELINE_ONLY)
    fetch_toml = replay.FETCH_TOML.format(enabled="true", azure_filter=replay.AZURE_FILTER)
    (config / "fetch.toml").write_text(fetch_toml.replace(
        'providers = ["azure", "aws", "aws-spot", "gcp", "skypilot"]', 'providers = ["azure", "skypilot"]'))
    # No bundled price files: tonight's prices are only what the fetch brought.
    (config / "sources.toml").write_text('[[telemetry]]\npath = "data/samples/telemetry/published_benchmarks.csv"\n')
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(config))

    steps = nightly()
    assert list(steps) == ["fetch_prices", "ingest_prices", "ingest_telemetry", "train", "publish"]
    assert all(outcome.startswith("completed") for outcome in steps.values()), steps
    assert len(providers.requests_to(r"/api/retail/prices$")) == 3

    with warehouse(configured.resources().warehouse) as con:
        (fetched_at,) = con.execute("select distinct fetched_at from raw.fetch_attempts").fetchone()
        p5 = con.execute("select usd_per_gpu_hour, observed_at from core.prices_current where provider = 'aws' "
                         "and instance_type = 'p5.48xlarge' and region = 'us-east-1' and pricing = 'on_demand'"
                         ).fetchall()
        sources = con.execute("select count(*) from core.prices_current where source_file not like ?",
                              [f"{gpucost_home / 'downloads'}%"]).fetchone()
    assert {round(price, 4) for price, _ in p5} == {6.88} and {at for _, at in p5} == {fetched_at}
    assert sources == (0,)  # every current price came from a download
    published = duckdb.connect(str(gpucost_home / "published.duckdb"), read_only=True)
    try:
        status = published.sql("select provider, status, price_age_days from price_fetch_status order by 1").fetchall()
        ranked = published.sql("select count(*) from gpu_cost_ranking where provider = 'azure'").fetchall()[0][0]
    finally:
        published.close()
    assert [(p, s) for p, s, _ in status] == [("azure", "ok"), ("skypilot", "ok")]
    assert ranked > 0

    # The README's price_fetch_status query, through the real command line.
    from tests.test_readme import gpucost, readme_sql_examples

    (query,) = [q for q in readme_sql_examples() if "price_fetch_status" in q]
    done = gpucost("sql", "--csv", query, home=gpucost_home)
    assert done.returncode == 0, done.stderr
    import csv

    printed = list(csv.reader(done.stdout.splitlines()))[1:]  # provider, status, detail, last success, age
    assert [(r[0], r[1], r[2]) for r in printed] == [("azure", "ok", ""), ("skypilot", "ok", "")]
    assert all(float(r[4]) < 0.01 for r in printed)  # fetched moments ago
