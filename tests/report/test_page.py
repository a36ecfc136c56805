"""The offers page's pieces that need no browser: data embedded for its scripts cannot end their block, zones at
one price fold into one row in `gpucost offers`' order, and such a row names its zones."""

from __future__ import annotations

import json

import polars as pl

from tasks.ranking.labels import places
from tasks.report.page import fold_zones, script_json


def test_script_json_cannot_close_its_script_block_and_reads_back_the_same() -> None:
    hostile = {"instance_type": "</script><script>alert(1)</script>", "gpu": '" onmouseover=alert(2) x="',
               "zone": "a\u2028b\u2029c & <!--"}
    text = script_json(hostile)
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text
    assert json.loads(text) == hostile


def test_zones_at_one_price_fold_into_one_row_in_order() -> None:
    offers = pl.DataFrame({
        "workload": ["w"] * 4, "provider": ["aws"] * 4, "region": ["us-east-2"] * 3 + ["us-west-2"],
        "zone": ["use2-az2", "use2-az1", "use2-az3", "usw2-az1"], "usd_per_mtoken": [0.05, 0.05, 0.06, 0.05],
        "position_in_workload": [1, 2, 3, 4],
    })
    folded = fold_zones(offers)
    assert folded["zones"].to_list() == [["use2-az1", "use2-az2"], ["use2-az3"], ["usw2-az1"]]
    assert folded["usd_per_mtoken"].to_list() == [0.05, 0.06, 0.05]


def test_an_offer_of_several_zones_names_them() -> None:
    assert places("us-east-2", ["use2-az1", "use2-az2"]) == "us-east-2 use2-az1, use2-az2"
    assert places("us-east-2", ["use2-az1"]) == "us-east-2 use2-az1"
    assert places("us-central1", ["us-central1-a"]) == "us-central1-a"
    assert places("westus", [None]) == "westus"


def test_gpucost_report_without_a_published_night_says_how_to_make_one(gpucost_home) -> None:
    from typer.testing import CliRunner

    from gpucost.cli import app

    done = CliRunner().invoke(app, ["report"])
    assert done.exit_code == 1
    assert "no published ranking at" in done.output and "gpucost run" in done.output
    assert not (gpucost_home / "report" / "index.html").exists()
