"""data/reference/instance_machines.csv: one row per instance type, sane values, and the AWS offer file's own
networkPerformance where the bundled offer files give one."""

from __future__ import annotations

import json
import re

import duckdb
import polars as pl
import pytest

from tasks.reference import require_unique_keys
from tests import configured
from tests.conftest import PRICE_SAMPLES

MACHINES = configured.reference_files()["instance_machines"]
KINDS = {"EFA", "InfiniBand", "RoCE", "GPUDirect-TCPX", "GPUDirect-TCPXO", "Ethernet"}


def machines() -> pl.DataFrame:
    return pl.read_csv(MACHINES)


def test_each_row_is_one_machine_with_a_source():
    require_unique_keys(MACHINES, ("provider", "instance_type"))
    frame = machines()
    assert frame["source"].null_count() == 0
    # the scale-up domain is within the instance (a VM never shares NVLink with another VM here: no NVL72 rack
    # is in the bundled price lists) and at least one GPU
    assert ((frame["scale_up_domain_gpus"] >= 1) & (frame["scale_up_domain_gpus"] <= frame["gpus"])).all()
    listed = frame.filter(pl.col("network_gbps").is_not_null())
    assert set(listed["network_kind"].to_list()) <= KINDS
    # a row without a network says that it is defaulted
    assert frame.filter(pl.col("network_gbps").is_null())["source"].str.contains("defaulted").all()


def gigabits(text: str) -> float:
    """AWS networkPerformance "100 Gigabit" / "Up to 10 Gigabit" -> Gb/s (the ceiling, as the reference takes)."""
    return float(re.search(r"([\d.]+) Gigabit", text).group(1))


def test_aws_rows_agree_with_the_offer_files_network_performance():
    csv_offer = PRICE_SAMPLES / "aws_pricelist_ec2_offer_index_sample_v20250912225308.csv"
    from_csv = duckdb.sql(
        "select \"Instance Type\", any_value(\"Network Performance\") from read_csv($p, skip = 5, all_varchar = true)"
        " where \"GPU\" is not null and \"GPU\" not in ('0', 'NA') group by 1", params={"p": str(csv_offer)},
    ).fetchall()
    json_offer = json.loads((PRICE_SAMPLES / "aws_pricelist_ec2_offer_json_excerpt_opencost.json").read_text())
    listed = machines().filter(pl.col("provider") == "aws")
    from_json = [(p["attributes"]["instanceType"], p["attributes"]["networkPerformance"])
                 for p in json_offer["products"].values()
                 if p["attributes"].get("instanceType") in listed["instance_type"].to_list()]
    offered = dict(from_csv + from_json)
    assert offered == {"g5.48xlarge": "100 Gigabit", "p3.8xlarge": "10 Gigabit"}  # what the samples carry
    for instance_type, performance in offered.items():
        row = listed.row(by_predicate=pl.col("instance_type") == instance_type, named=True)
        assert row["network_gbps"] == pytest.approx(gigabits(performance))
        assert "networkPerformance" in row["source"]
