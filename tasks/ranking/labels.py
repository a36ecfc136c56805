"""How an offer is named and its figures written wherever a person reads them (`gpucost offers`, the report
page): its place (region and zone), its machine (GPUs per scale-up domain, network per GPU), and numbers to 3
significant figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def place(row: Mapping[str, Any]) -> str:
    """Where the offer is: its region and, where the price list gives one, its zone, so that two offers of one
    region at different prices can be told apart (`us-east-2 use2-az1`); a zone named after its region (GCP's
    `us-central1-a`) stands alone."""
    region, zone = row["region"], row.get("zone")
    if not zone:
        return str(region)
    if region and str(zone).startswith(str(region)):
        return str(zone)
    return f"{region} {zone}" if region else str(zone)


NETWORK_ABBREVIATIONS = {"InfiniBand": "IB", "Ethernet": "Eth", "GPUDirect-TCPX": "TCPX", "GPUDirect-TCPXO": "TCPXO"}


def network(row: Mapping[str, Any]) -> str:
    """The machine beside the GPUs: GPUs per scale-up domain and scale-out Gb/s per GPU, e.g. `8-way 400G EFA`
    (`?` marks a defaulted network)."""
    if row["scale_up_domain_gpus"] is None:
        return ""
    unknown = row["network_kind"] in (None, "unknown")
    kind = "?" if unknown else f" {NETWORK_ABBREVIATIONS.get(row['network_kind'], row['network_kind'])}"
    return f"{row['scale_up_domain_gpus']}-way {row['scale_out_gbps_per_gpu']:g}G{kind}"


def figure(value: float) -> str:
    """As a person reads it: 3 significant figures, thousands separated, no exponent."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def usd(value: float) -> str:
    """Dollars per million tokens to 3 significant figures, trailing zeros kept (0.400, 0.0136)."""
    return f"{value:,.0f}" if value >= 100 else f"{value:#.3g}"


def places(region: str | None, zones: Sequence[str | None]) -> str:
    """Where an offer of several zones at one price is: its region and those zones (`us-east-2 use2-az1,
    use2-az2`); one zone reads as `place` does."""
    named = [z for z in zones if z]
    if len(named) <= 1:
        return place({"region": region, "zone": named[0] if named else None})
    return f"{region} {', '.join(named)}" if region else ", ".join(named)
