"""Per GPU or per instance (sql/prices/plausibility.sql, checked_rows.sql; config/settings.toml [validation.prices]
min_share_of_gpu_median): a NEW offer whose USD per GPU-hour is far below the median of its GPU's current offers of
the same pricing kind, across providers, is quarantined naming both figures; the bundled offers never are."""

from __future__ import annotations

import csv
import statistics
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from tests.conftest import PRICE_SAMPLES
from tests.prices.helpers import ingest, source

HEADER = ["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo", "Price", "SpotPrice",
          "Region", "AvailabilityZone", "Arch"]


def h100_row(instance: str, count: int, price: str, spot: str = "") -> list[str]:
    info = (f"{{'Gpus': [{{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': {count}, 'MemoryInfo': "
            f"{{'SizeInMiB': 81920}}}}], 'TotalGpuMemoryInMiB': {81920 * count}}}")
    return [instance, "H100", f"{count}.0", "192.0", "2048.0", info, price, spot, "us-east-1", "us-east-1a", "x86_64"]


def write_catalog(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


@pytest.fixture
def two_clouds(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """The real AWS and Lambda SkyPilot samples: H100-SXM on-demand offers of two providers."""
    outcomes = ingest(con, [source(PRICE_SAMPLES / "skypilot_v8_aws_gpu_subset.csv", "aws", "skypilot"),
                            source(PRICE_SAMPLES / "skypilot_v8_lambda_gpu.csv", "lambda", "skypilot")])
    assert [o.status for o in outcomes] == ["loaded", "loaded"]
    return con


def median_of_current(con: duckdb.DuckDBPyConnection, gpu: str, pricing: str) -> float:
    """The median worked out here, in Python, from the current offers' rows (within 180 days of the newest)."""
    rows = con.execute("select usd_per_gpu_hour, observed_at from core.prices_current where gpu = $gpu "
                       "and pricing = $pricing and provider <> 'owned'", {"gpu": gpu, "pricing": pricing}).fetchall()
    newest = max(at for _, at in rows)
    return statistics.median(price for price, at in rows if at >= newest - timedelta(days=180))


def test_a_per_gpu_price_read_as_the_instance_price_is_quarantined_naming_both_figures(
        two_clouds: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    con = two_clouds
    median = median_of_current(con, "H100-SXM", "on_demand")
    offers = con.execute("select count(*), count(distinct provider) from core.prices_current "
                         "where gpu = 'H100-SXM' and pricing = 'on_demand'").fetchall()[0]
    assert offers[1] == 2 and 0.1 * median > 0.375  # 3.0 USD/h / 8 GPUs, far below a tenth of the median
    stored_before = con.execute("select count(*) from core.price_observations").fetchall()[0][0]
    probe = write_catalog(tmp_path / "new_offers.csv", [
        h100_row("p5.probe-per-gpu", 8, "3.0"),      # the per-GPU price 3.0 given as the 8-GPU instance's
        h100_row("p5.probe-single", 1, "0.375"),     # one GPU: no per-GPU / per-instance doubt, simply too low
        h100_row("p5.probe-plausible", 8, "30.0"),   # 3.75 per GPU-hour
    ])

    outcome = ingest(con, [source(probe, "aws", "skypilot")])[0]

    assert (outcome.rows_loaded, outcome.rows_quarantined) == (1, 2)
    reasons = dict(con.execute("select source_line, failed_check from quarantine.rejected_rows "
                               "where source_file = $f", {"f": str(probe)}).fetchall())
    figures = (f"usd_per_gpu_hour 0.375 is below 0.1 × the H100-SXM on-demand median {median:.3g} across 2 "
               f"providers ({offers[0]} current offers)")
    assert reasons[2].startswith("expect_column_values_to_be_between(share_of_gpu_median): implausible price per "
                                 "GPU-hour for a new offer")
    assert reasons[2].endswith(f": {figures}; the price given, 3 USD/h, is plausible per GPU-hour, not for the whole "
                               "8-GPU instance (a per-GPU price read as per instance?)")
    assert reasons[3].endswith(f": {figures}")
    assert con.execute("select instance_type from core.price_observations where source_file = $f",
                       {"f": str(probe)}).fetchall() == [("p5.probe-plausible",)]
    assert con.execute("select count(*) from core.price_observations").fetchall()[0][0] == stored_before + 1


def test_owned_gpus_a_gpu_of_one_provider_and_an_old_observation_are_not_judged(
        two_clouds: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    con = two_clouds
    owned = tmp_path / "owned.csv"
    # amortised owned hardware is far below a cloud's price by nature (config: gpu_median_exempt_providers)
    owned.write_text("site,gpu,gpu_count,usd_per_gpu_hour_amortised\nlab,H100,8,0.9\n", encoding="utf-8")
    # a dated history: an H100 offer observed in 2020, far older than the 180 days before the newest current offer
    history = tmp_path / "history.csv"
    history.write_text("timestamp,instance,price_usd\n2020-01-01T00:00:00,p5.48xlarge,2.0\n", encoding="utf-8")
    outcomes = ingest(con, [source(owned, "owned", "owned"),
                            source(history, "aws", "price-history", region="ap-south-2")])
    assert [(o.rows_loaded, o.rows_quarantined) for o in outcomes] == [(1, 0), (1, 0)]
    # GH200 is priced by Lambda alone: no median across providers, nothing to judge by
    assert con.execute("select count(distinct provider) from core.prices_current where gpu = 'GH200'").fetchall() \
        == [(1,)]
    lone = write_catalog(tmp_path / "gh200.csv", [[
        "gpu_1x_gh200_probe", "GH200", "1.0", "64.0", "432.0", "", "0.3", "", "us-east-1", "us-east-1a", "arm64"]])
    assert ingest(con, [source(lone, "lambda", "skypilot")])[0].rows_quarantined == 0
