"""The `gpucost` commands for prices, and the `ingest_prices` flow with its summary artifact."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tasks.warehouse import warehouse
from tests import configured
from tests.conftest import PRICE_SAMPLES
from tests.prices.helpers import ingest, source

GPUCOST = Path(sys.executable).with_name("gpucost")


def test_sql_warehouse_answers_read_only(gpucost_home: Path) -> None:
    with warehouse(configured.resources().warehouse) as con:
        ingest(
            con, [source(PRICE_SAMPLES / "gcp_billing_catalog_skus_page_excerpt_opencost.json", "gcp", "gcp-billing")]
        )
    env = {**os.environ, "GPUCOST_HOME": str(gpucost_home)}
    answer = subprocess.run(
        [
            str(GPUCOST),
            "sql",
            "--warehouse",
            "--csv",
            "select instance_type, usd_per_hour from core.prices_current "
            "where region = 'us-central1' and instance_type = 'a2-highgpu-1g'",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert answer.returncode == 0, answer.stderr
    # 2.933908 + 12 x 0.031611 + 85 x 0.004237 = 3.673385
    assert answer.stdout.splitlines()[1].startswith("a2-highgpu-1g,3.67338")
    write = subprocess.run(
        [str(GPUCOST), "sql", "--warehouse", "delete from core.price_observations"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert write.returncode != 0 and "read-only" in write.stderr.lower()


def test_cli_ingest_with_provider_and_format(prefect_harness: None, gpucost_home: Path) -> None:
    # A real process, talking to the session's temporary Prefect API (no second server to start).
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "GPUCOST_HOME": str(gpucost_home), "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    path = PRICE_SAMPLES / "skypilot_v8_aws_gpu_subset.csv"
    result = subprocess.run(
        [str(GPUCOST), "ingest", "prices", "--provider", "aws", "--format", "skypilot", str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    # progress per file, then the totals (the markdown summary is the flow's artifact)
    assert re.search(r"ingest prices: file 1 of 1: [\d,]+ rows loaded.*: skypilot_v8_aws_gpu_subset.csv", result.stderr)
    assert "1 file(s): 1 loaded" in result.stdout
    with warehouse(configured.resources().warehouse) as con:
        rows = con.execute(
            "select distinct usd_per_gpu_hour from core.prices_current "
            "where instance_type = 'p5.48xlarge' and region = 'us-east-1' and pricing = 'on_demand'"
        ).fetchall()
    assert rows == [(6.88,)]  # 55.04 / 8


def test_cli_ingest_refuses_a_path_the_sources_file_does_not_name(tmp_path: Path, gpucost_home: Path) -> None:
    stray = tmp_path / "prices.csv"
    stray.write_text("a,b\n1,2\n")
    env = {**os.environ, "GPUCOST_HOME": str(gpucost_home)}
    result = subprocess.run(
        [str(GPUCOST), "ingest", "prices", str(stray)], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 2
    assert "not named in config/sources.toml" in result.stderr


def test_flow_writes_the_summary_artifact(prefect_harness: None, tmp_path: Path) -> None:
    from prefect.artifacts import Artifact

    from flows.ingest_prices import ingest_prices

    missing = tmp_path / "missing.json"
    outcomes = ingest_prices(
        [
            source(PRICE_SAMPLES / "gcp_billing_catalog_skus_page_excerpt_opencost.json", "gcp", "gcp-billing"),
            source(missing, "gcp", "gcp-billing"),
        ]
    )
    assert [o.status for o in outcomes] == ["loaded", "quarantined"]
    artifact = Artifact.get("ingest-prices-summary")
    assert artifact is not None
    # 2 files: 1 loaded (15 offers: 5 A2 machine types x 3 regions), 1 quarantined (missing).
    assert "2 files: 1 loaded, 0 already ingested, 1 quarantined" in artifact.data
    assert "missing.json: file not found" in artifact.data
