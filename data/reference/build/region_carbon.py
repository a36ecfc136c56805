"""Rebuild data/reference/region_carbon.csv (run by hand when a source updates; no network):

    python data/reference/build/region_carbon.py CODECARBON_DATA_DIR GCP_YEARLY_CSV > data/reference/region_carbon.csv

CODECARBON_DATA_DIR: `codecarbon/data` of an unpacked codecarbon wheel (3.3.2 used; MIT licence), whose
private_infra/ holds Our World in Data country intensities (global_energy_mix.json), EPA eGRID2023 state
rates (2023/usa_emissions.json) and Canadian provincial mixes (2023/canada_energy_mix.json).
GCP_YEARLY_CSV: Google's own region data (GoogleCloudPlatform/region-carbon-info data/yearly/<year>.csv).
The region -> place mapping below is the providers' published region locations."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

LBS_PER_MWH_TO_G_PER_KWH = 453.59237 / 1000.0   # 1 lb = 453.59237 g; 1 MWh = 1000 kWh

# provider, region -> ("state", US state) | ("province", Canadian province) | ("country", ISO3)
PLACES: dict[tuple[str, str], tuple[str, str]] = {
    ("aws", "us-east-1"): ("state", "virginia"), ("aws", "us-east-2"): ("state", "ohio"),
    ("aws", "us-west-1"): ("state", "california"), ("aws", "us-west-2"): ("state", "oregon"),
    ("aws", "ca-central-1"): ("province", "quebec"), ("aws", "af-south-1"): ("country", "ZAF"),
    ("aws", "ap-east-1"): ("country", "HKG"), ("aws", "ap-northeast-1"): ("country", "JPN"),
    ("aws", "ap-northeast-2"): ("country", "KOR"), ("aws", "ap-northeast-3"): ("country", "JPN"),
    ("aws", "ap-south-1"): ("country", "IND"), ("aws", "ap-southeast-1"): ("country", "SGP"),
    ("aws", "ap-southeast-2"): ("country", "AUS"), ("aws", "ap-southeast-3"): ("country", "IDN"),
    ("aws", "eu-central-1"): ("country", "DEU"), ("aws", "eu-north-1"): ("country", "SWE"),
    ("aws", "eu-south-1"): ("country", "ITA"), ("aws", "eu-south-2"): ("country", "ESP"),
    ("aws", "eu-west-1"): ("country", "IRL"), ("aws", "eu-west-2"): ("country", "GBR"),
    ("aws", "eu-west-3"): ("country", "FRA"), ("aws", "me-central-1"): ("country", "ARE"),
    ("aws", "me-south-1"): ("country", "BHR"), ("aws", "sa-east-1"): ("country", "BRA"),
    ("azure", "centralus"): ("state", "iowa"), ("azure", "eastus"): ("state", "virginia"),
    ("azure", "eastus2"): ("state", "virginia"), ("azure", "northcentralus"): ("state", "illinois"),
    ("azure", "southcentralus"): ("state", "texas"), ("azure", "westus"): ("state", "california"),
    ("azure", "westus2"): ("state", "washington"), ("azure", "westus3"): ("state", "arizona"),
    # Lambda publishes the country (and city) of these regions, not always the grid region: country averages
    ("lambda", "asia-northeast-1"): ("country", "JPN"), ("lambda", "asia-south-1"): ("country", "IND"),
    ("lambda", "australia-east-1"): ("country", "AUS"), ("lambda", "europe-central-1"): ("country", "DEU"),
    ("lambda", "us-east-1"): ("country", "USA"), ("lambda", "us-east-2"): ("country", "USA"),
    ("lambda", "us-east-3"): ("country", "USA"), ("lambda", "us-midwest-1"): ("country", "USA"),
    ("lambda", "us-south-1"): ("country", "USA"), ("lambda", "us-south-2"): ("country", "USA"),
    ("lambda", "us-south-3"): ("country", "USA"), ("lambda", "us-west-1"): ("country", "USA"),
    ("lambda", "us-west-2"): ("country", "USA"), ("lambda", "us-west-3"): ("country", "USA"),
}
# codecarbon's per-source factors (gCO2e/kWh) by the names canada_energy_mix.json uses
CANADA_SOURCES = {"naturalGas": "natural_gas", "petroleum": "petroleum", "coal": "coal", "nuclear": "nuclear",
                  "hydro": "hydroelectricity", "wind": "wind", "solar": "solar", "biomass": "biomass",
                  "tidal": "hydroelectricity"}


def rows(codecarbon: Path, gcp_csv: Path) -> list[dict[str, object]]:
    infra = codecarbon / "private_infra"
    countries = json.loads((infra / "global_energy_mix.json").read_text(encoding="utf-8"))
    states = json.loads((infra / "2023" / "usa_emissions.json").read_text(encoding="utf-8"))
    provinces = json.loads((infra / "2023" / "canada_energy_mix.json").read_text(encoding="utf-8"))
    factors = json.loads((infra / "carbon_intensity_per_source.json").read_text(encoding="utf-8"))
    out: list[dict[str, object]] = []
    year = int(gcp_csv.stem)
    with gcp_csv.open(encoding="utf-8") as file:
        for row in csv.DictReader(file):
            out.append({"provider": "gcp", "region": row["Google Cloud Region"],
                        "grid_gco2e_per_kwh": float(row["Grid carbon intensity (gCO2eq / kWh)"]), "year": year,
                        "cfe_share": float(row["Google CFE"]),
                        "source": f"Google Cloud region carbon data {year} (GoogleCloudPlatform/region-carbon-info "
                                  f"data/yearly/{year}.csv), {row['Location']}"})
    for (provider, region), (kind, place) in sorted(PLACES.items()):
        if kind == "state":
            value = states[place]["emissions"] * LBS_PER_MWH_TO_G_PER_KWH
            source, year = f"EPA eGRID2023 state CO2e output rate, {place.title()} (via codecarbon 3.3.2)", 2023
        elif kind == "province":
            mix = provinces[place]
            value = sum(mix[k] * factors[v] for k, v in CANADA_SOURCES.items()) / 100.0
            source = (f"{place.title()} 2023 generation mix x lifecycle factors per source (codecarbon 3.3.2 "
                      "canada_energy_mix.json, carbon_intensity_per_source.json)")
            year = 2023
        else:
            entry = countries[place]
            value, year = entry["carbon_intensity"], entry["year"]
            source = (f"Our World in Data / Ember country average, {entry['country_name']} (via codecarbon 3.3.2 "
                      "global_energy_mix.json)")
        out.append({"provider": provider, "region": region, "grid_gco2e_per_kwh": round(value, 2), "year": year,
                    "cfe_share": None, "source": source})
    return out


if __name__ == "__main__":
    writer = csv.DictWriter(sys.stdout, ["provider", "region", "grid_gco2e_per_kwh", "year", "cfe_share", "source"],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows(Path(sys.argv[1]), Path(sys.argv[2])))
