"""How `gpucost offers` names an offer's place (the README's examples check the whole table against a real night)."""

from __future__ import annotations

import pytest

from gpucost.present import place


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
