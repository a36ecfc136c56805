"""What a person reads: how `gpucost offers` names an offer's place (the README's examples check the whole table
against a real night), and the name the commands give themselves."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpucost.present import place
from tests.cli.night import GPUCOST


@pytest.mark.parametrize(("region", "zone", "expected"), [
    # AWS zone ids do not repeat the region: both are shown (two us-east-2 spot offers differ by zone only)
    ("us-east-2", "use2-az1", "us-east-2 use2-az1"),
    ("us-east-1", "use1-atl2-az1", "us-east-1 use1-atl2-az1"),
    # a GCP zone is its region plus a letter: the zone alone says both
    ("us-central1", "us-central1-a", "us-central1-a"),
    # no zone in the price list (Azure, Lambda, GCP billing): the region
    ("eastus", None, "eastus"),
    ("asia-south-1", "", "asia-south-1"),
])
def test_the_place_of_an_offer_is_its_region_and_zone(region: str, zone: str | None, expected: str) -> None:
    assert place({"region": region, "zone": zone}) == expected


@pytest.mark.parametrize("args", [("run", "--help"), ("ingest", "telemetry", "--help"), ("run", "--no-such-option")])
def test_a_supervised_command_names_itself_gpucost(args: tuple[str, ...], tmp_path: Path) -> None:
    """`gpucost run` and `gpucost ingest` run in a supervised child (`python -m gpucost.cli`): its usage line and
    its 'Try ... --help' said `python -m gpucost.cli run`, a command the user never typed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUCOST_", "PREFECT_", "MLFLOW_"))}
    done = subprocess.run([str(GPUCOST), *args], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**env, "GPUCOST_HOME": str(tmp_path / "home"), "COLUMNS": "100"})
    output = done.stdout + done.stderr
    assert f"Usage: gpucost {' '.join(a for a in args if not a.startswith('-'))} [OPTIONS]" in output, output
    assert "python -m" not in output
