"""Each adapter on the real sample files: skip counts by hand, worked prices, GPU shapes.

Plain functions (no warehouse): adapter -> records, and normalise for the GPU ids."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from tasks.prices.adapter import AdapterContext, AdapterError
from tasks.prices.ingest import normalise
from tasks.providers import aws as aws_offer
from tasks.providers import aws_spot, owned, price_history, skypilot
from tasks.providers import azure as azure_retail
from tasks.providers import gcp as gcp_billing
from tests import configured
from tests.conftest import PRICE_SAMPLES

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def ctx(provider: str, **options: object) -> AdapterContext:
    return AdapterContext(provider=provider, ingest_time=NOW, options=dict(options),
                          reference_dir=configured.resources().reference,
                          validation=configured.settings().validation.prices)


def normalised(records: pl.DataFrame) -> pl.DataFrame:
    return normalise(records, configured.aliases(), "x", "sha", NOW, configured.overrides())


# --- AWS offer files -------------------------------------------------------------------------------


def test_aws_offer_csv_skip_counts_match_the_file() -> None:
    # Counted in the file (44 rows after the 5-line preamble and the header):
    # TermType Reserved: 30 price dimensions (c6i.large rows 1-11 and 13-21, m6id.2xlarge rows 35-44), paired
    # by SKU and offer term code into 19 terms: c6i.large 12 (2 lease lengths x 3 purchase options x 2
    # classes), m6id.2xlarge 7; each term is one record. All 19 are Windows with SQL Server.
    # The 14 OnDemand rows: 13 have Operating System Windows/RHEL/SUSE/Ubuntu Pro/RHEL with HA, and the
    # one Linux row (c6g.4xlarge) has Tenancy Host. 19 + 13 = 32 not Linux, + 1 = 33 records, nothing in scope.
    result = aws_offer.parse(PRICE_SAMPLES / "aws_pricelist_ec2_offer_index_sample_v20250912225308.csv", ctx("aws"))
    assert result.records.height == 0
    assert result.skipped_by_reason == {
        "operating system not Linux (Windows, RHEL, SUSE, Ubuntu Pro, ...)": 32,
        "tenancy not Shared (Dedicated or Host)": 1,
    }


def test_aws_offer_json_skip_counts_match_the_file() -> None:
    # Three OnDemand price dimensions: gp3 storage (product family Storage), p3.8xlarge (Windows BYOL),
    # m5.large whose only term is the hand-edited "Upfront Fee" (unit Quantity, not Hrs).
    result = aws_offer.parse(PRICE_SAMPLES / "aws_pricelist_ec2_offer_json_excerpt_opencost.json", ctx("aws"))
    # the gp3 volume is a storage record: "$0.08 per GB-month of General Purpose (gp3) ... US East (Ohio)"
    assert result.records.select("record_kind", "region", "storage_type", "usd_per_gb_month").rows() == [
        ("storage", "us-east-2", "gp3", 0.08)
    ]
    assert result.skipped_by_reason == {
        "operating system not Linux (Windows, RHEL, SUSE, Ubuntu Pro, ...)": 1,
        "not an hourly price (upfront fee or other unit)": 1,
    }


def test_aws_offer_csv_in_scope_row_gets_its_gpus_from_the_shape_table(tmp_path: Path) -> None:
    # The real file has no in-scope row; its g5.48xlarge row (Dedicated, SUSE, UnusedCapacityReservation,
    # $21.30264) is turned into a Linux/Shared/Used row to exercise the in-scope path.
    lines = (PRICE_SAMPLES / "aws_pricelist_ec2_offer_index_sample_v20250912225308.csv").read_text().splitlines()
    g5 = next(line for line in lines if "g5.48xlarge" in line)
    g5 = g5.replace('"Dedicated"', '"Shared"').replace('"SUSE"', '"Linux"')
    g5 = g5.replace('"UnusedCapacityReservation"', '"Used"')
    path = tmp_path / "offer.csv"
    path.write_text("\n".join([*lines[:6], g5]) + "\n")
    result = aws_offer.parse(path, ctx("aws"))
    row = normalised(result.records).row(0, named=True)
    # g5.48xlarge = 8 x A10G (aws_instance_gpus.csv); 21.30264 / 8 = 2.66283 USD per GPU-hour.
    assert (row["instance_type"], row["region"], row["gpu"], row["gpu_count"]) == (
        "g5.48xlarge",
        "ap-southeast-2",
        "A10G",
        8,
    )
    assert row["usd_per_hour"] == pytest.approx(21.30264)
    assert row["usd_per_gpu_hour"] == pytest.approx(2.66283)
    assert row["source_line"] == 7  # 5 preamble lines, the header, then this row
    assert row["observed_at"] == datetime(2025, 9, 12, 22, 53, 8, tzinfo=UTC)  # "Publication Date" line


# --- AWS spot history ------------------------------------------------------------------------------


def test_aws_spot_tsv_keeps_linux_and_derives_region_from_az_id() -> None:
    # `cut -f3 | sort | uniq -c`: 510 Linux/UNIX, 510 Red Hat Enterprise Linux, 510 SUSE Linux, 304 Windows.
    result = aws_spot.parse(PRICE_SAMPLES / "aws_spot_price_history_2022-05-31_gpu_az_ids.tsv", ctx("aws"))
    assert result.records.height == 510
    assert result.skipped_by_reason == {
        "not Linux/UNIX (Red Hat Enterprise Linux)": 510,
        "not Linux/UNIX (SUSE Linux)": 510,
        "not Linux/UNIX (Windows)": 304,
    }
    rows = normalised(result.records)
    assert rows["rejected_reason"].null_count() == 510  # every AZ-ID prefix and instance type is known
    first = rows.row(0, named=True)
    # Line 1: euw3-az2  g4dn.4xlarge  Linux/UNIX  0.466400  2022-05-31T18:20:41+00:00; g4dn.4xlarge = 1 T4.
    assert (first["zone"], first["region"], first["gpu"], first["gpu_count"]) == ("euw3-az2", "eu-west-3", "T4", 1)
    assert (first["pricing"], first["usd_per_hour"], first["usd_per_gpu_hour"]) == ("spot", 0.4664, 0.4664)
    assert first["observed_at"] == datetime(2022, 5, 31, 18, 20, 41, tzinfo=UTC)
    assert set(rows.filter(pl.col("zone").str.starts_with("use1-"))["region"]) == {"us-east-1"}


def test_aws_spot_json_form_reads_az_names(tmp_path: Path) -> None:
    path = tmp_path / "spot.json"
    path.write_text(
        '{"SpotPriceHistory": [{"AvailabilityZone": "us-west-2b", "InstanceType": "p4d.24xlarge",'
        ' "ProductDescription": "Linux/UNIX", "SpotPrice": "9.830400", "Timestamp": "2024-03-01T10:00:00+00:00"},'
        ' {"AvailabilityZone": "us-west-2b", "InstanceType": "p4d.24xlarge",'
        ' "ProductDescription": "Windows", "SpotPrice": "12.0", "Timestamp": "2024-03-01T10:00:00+00:00"}]}'
    )
    result = aws_spot.parse(path, ctx("aws"))
    row = normalised(result.records).row(0, named=True)
    # us-west-2b -> us-west-2; p4d.24xlarge = 8 x A100 40 GB; 9.8304 / 8 = 1.2288 USD per GPU-hour.
    assert (row["region"], row["gpu"], row["usd_per_gpu_hour"]) == ("us-west-2", "A100-40GB", pytest.approx(1.2288))
    assert result.skipped_by_reason == {"not Linux/UNIX (Windows)": 1}


# --- Azure retail ----------------------------------------------------------------------------------


def test_azure_retail_json_skip_counts_match_the_file() -> None:
    # SOURCES.md + the file: 598 items. serviceName Azure Machine Learning 14 + HDInsight 4 = 18 (all
    # Consumption, Linux). Of the 580 VM items: DevTestConsumption 160, Consumption Windows 67 + 64 (Spot)
    # + 32 (Low Priority) = 163, Consumption Linux Low Priority 32 are skipped.
    # Left: Linux 86 - 18 = 68 regular + 65 Spot = 133, and the 92 reservations (reservationTerm "1 Year" 44,
    # "3 Years" 44, "5 Years" 4): 18 + 160 + 163 + 32 + 133 + 92 = 598.
    result = azure_retail.parse(PRICE_SAMPLES / "azure_retail_prices_gpu_westus.json", ctx("azure"))
    assert result.skipped_by_reason == {
        "not a Virtual Machines meter (Azure Machine Learning, HDInsight, ...)": 18,
        "dev/test price (DevTestConsumption)": 160,
        "Windows": 163,
        "Low Priority": 32,
    }
    # in one order every run (stored as JSON in raw.ingested_files: identical nights store identical maps)
    assert list(result.skipped_by_reason) == sorted(result.skipped_by_reason)
    counts = dict(result.records.group_by("pricing").len().iter_rows())
    assert counts == {"on_demand": 68, "spot": 65, "reserved_1y": 44, "reserved_3y": 44, "reserved_5y": 4}


def test_azure_retail_csv_excerpt_skip_counts_match_the_file() -> None:
    # The 20 rows, by the first rule broken: SQL Database, Network Watcher x5, Grafana = 7 not VM;
    # DevTestConsumption rows 3, 11, 13, 17, 20 = 5; Windows Consumption rows 2, 10, 12, 16, 19 = 5;
    # Linux VMs without a GPU (E2bds_v5, D48as_v5, E16a_v4 Spot) = 3. 7 + 5 + 5 + 3 = 20.
    result = azure_retail.parse(
        PRICE_SAMPLES / "azure_retail_prices_items_westus_excerpt_first20rows.csv", ctx("azure")
    )
    assert result.records.height == 0
    assert result.skipped_by_reason == {
        "not a Virtual Machines meter (Azure Machine Learning, HDInsight, ...)": 7,
        "dev/test price (DevTestConsumption)": 5,
        "Windows": 5,
        "no GPU (not an N-series GPU VM size)": 3,
    }


def test_azure_gpu_names_are_disambiguated_by_vm_size() -> None:
    rows = normalised(azure_retail.parse(PRICE_SAMPLES / "azure_retail_prices_gpu_westus.json", ctx("azure")).records)
    gpu_of = dict(rows.select("instance_type", "gpu").unique().iter_rows())
    assert gpu_of["Standard_NC24ads_A100_v4"] == "A100-PCIe-80GB"  # catalogued as A100 80GB, a PCIe part
    assert gpu_of["Standard_NC40ads_H100_v5"] == "H100-NVL"
    assert gpu_of["Standard_ND96isr_H100_v5"] == "H100-SXM"
    # ND96isr_H200_v5 Linux on-demand 110.24 (first item of the file) / 8 GPUs = 13.78 USD per GPU-hour.
    h200 = rows.filter(pl.col("instance_type") == "Standard_ND96isr_H200_v5", pricing="on_demand").row(0, named=True)
    assert (h200["usd_per_hour"], h200["usd_per_gpu_hour"]) == (110.24, pytest.approx(13.78))


# --- GCP billing catalog ---------------------------------------------------------------------------


def test_gcp_billing_composes_a2_highgpu_1g_from_three_skus() -> None:
    result = gcp_billing.parse(PRICE_SAMPLES / "gcp_billing_catalog_skus_page_excerpt_opencost.json", ctx("gcp"))
    rows = normalised(result.records)
    a2 = rows.filter(instance_type="a2-highgpu-1g", region="us-central1").row(0, named=True)
    # GPU 2 + 933908000e-9 = 2.933908; core 0.031611 x 12 vCPU = 0.379332; RAM 0.004237 x 85 GiB = 0.360145.
    # 2.933908 + 0.379332 + 0.360145 = 3.673385 USD per hour (= Cyclenerd's a2-highgpu-1g us-central1).
    assert a2["usd_per_hour"] == pytest.approx(3.673385, abs=1e-9)
    assert (a2["gpu"], a2["gpu_count"], a2["vcpus"], a2["memory_gb"]) == ("A100-40GB", 1, 12, 85)
    assert a2["observed_at"] == datetime(2023, 3, 24, 10, 52, 50, 681000, tzinfo=UTC)  # effectiveTime
    # 5 A2 machine types (a2-highgpu-1/2/4/8g, a2-megagpu-16g) x 3 serviceRegions, on-demand only.
    assert rows.height == 15


def test_gcp_billing_bare_list_spot_composition_and_skip_counts() -> None:
    result = gcp_billing.parse(PRICE_SAMPLES / "gcp_billing_catalog_skus_gpu_trimmed_cromwell-monitor.json", ctx("gcp"))
    # 11 SKUs: network egress + E2 Custom core = 2 not GPU/core/RAM; of the 9 left, the A3Plus core +
    # A3Plus RAM + H100 80GB Plus GPU (all Spot) compose a3-megagpu-8g; 6 price nothing, among them the
    # 3-year commitment GPU SKU (the file has no A3Plus core and RAM commitment SKUs to compose it with).
    assert result.skipped_by_reason == {
        gcp_billing.NOT_VM_PART: 2,
        gcp_billing.UNUSED: 6,
    }
    rows = normalised(result.records)
    assert sorted(rows["region"]) == ["us-central1", "us-west1"]
    mega = rows.row(0, named=True)
    # 8 x 4.1377 + 208 x 0.01481 + 1872 x 0.001289 = 33.1016 + 3.08048 + 2.413008 = 38.595088.
    assert (mega["instance_type"], mega["pricing"], mega["gpu"]) == ("a3-megagpu-8g", "spot", "H100-SXM")
    assert mega["usd_per_hour"] == pytest.approx(38.595088, abs=1e-9)


@pytest.mark.parametrize(("units", "nanos", "reason"), [
    ("2,000", 933908000, "units 2,000 has a comma: a decimal comma or a thousands separator"),
    ("2", "93a", "nanos '93a' of SKU"),
])
def test_gcp_billing_an_unreadable_rate_quarantines_the_offers_it_prices_not_the_file(
        tmp_path: Path, units: str, nanos: object, reason: str) -> None:
    """The opencost excerpt's three SKUs (A100 GPU, A2 RAM, A2 core; 3 regions) compose 5 A2 shapes x 3 regions = 15
    offers; a copy of them serving europe-west4 whose GPU SKU's rate cannot be read adds 5 offers, each quarantined
    with the reason; the 15 load as before (before: the whole file was quarantined, `int()` of '2,000')."""
    skus = json.loads((PRICE_SAMPLES / "gcp_billing_catalog_skus_page_excerpt_opencost.json").read_text())["skus"]
    copies = json.loads(json.dumps(skus))
    for sku in copies:
        sku["serviceRegions"], sku["skuId"] = ["europe-west4"], sku["skuId"] + "-copy"
    rate = copies[0]["pricingInfo"][0]["pricingExpression"]["tieredRates"][-1]["unitPrice"]
    rate["units"], rate["nanos"] = units, nanos
    path = tmp_path / "skus.json"
    path.write_text(json.dumps({"skus": skus + copies}))
    records = gcp_billing.parse(path, ctx("gcp")).records
    assert records is not None
    rejected = records.filter(pl.col("rejected_reason").is_not_null())
    assert rejected["region"].unique().to_list() == ["europe-west4"] and rejected.height == 5
    assert all(reason in text for text in rejected["rejected_reason"])
    kept = records.filter(pl.col("rejected_reason").is_null())
    assert kept.height == 15 and "europe-west4" not in kept["region"].to_list()


def test_gcp_unit_price_takes_first_priced_tier() -> None:
    free_first = {
        "pricingInfo": [
            {
                "pricingExpression": {
                    "tieredRates": [
                        {"startUsageAmount": 0, "unitPrice": {"units": "0", "nanos": 0}},
                        {"startUsageAmount": 1, "unitPrice": {"units": "0", "nanos": 100000000}},
                    ]
                }
            }
        ]
    }
    assert gcp_billing.unit_price(free_first) == pytest.approx(0.1)


# --- SkyPilot --------------------------------------------------------------------------------------


def test_skypilot_gcp_accelerator_plus_host() -> None:
    result = skypilot.parse(
        PRICE_SAMPLES / "skypilot_v8_gcp_gpu_accelerators.csv",
        ctx("gcp", host_vms=str(PRICE_SAMPLES / "skypilot_v8_gcp_gpu_host_vms_subset.csv")),
    )
    rows = normalised(result.records)
    a2 = rows.filter(instance_type="a2-highgpu-1g", zone="us-central1-a", pricing="on_demand").row(0, named=True)
    # Accelerator row (line 13) 2.93391 + host row a2-highgpu-1g us-central1-a 0.73948 = 3.67339.
    assert a2["usd_per_hour"] == pytest.approx(3.67339, abs=1e-9)
    # Spot: 1.4341 + 0.36975 = 1.80385.
    spot = rows.filter(instance_type="a2-highgpu-1g", zone="us-central1-a", pricing="spot").row(0, named=True)
    assert spot["usd_per_hour"] == pytest.approx(1.80385, abs=1e-9)
    unpriced = rows.filter(pl.col("rejected_reason").is_not_null())
    assert unpriced["usd_per_hour"].null_count() == unpriced.height > 0
    assert set(unpriced["rejected_reason"]) == {skypilot.NO_HOST_ROW, skypilot.NO_HOST_TYPE}
    # T4 rows have no fixed host (N1): their reason says so, and the notes list them.
    t4 = unpriced.filter(gpu_name="T4")
    assert set(t4["rejected_reason"]) == {skypilot.NO_HOST_TYPE}
    assert any("T4 x1" in note for note in result.notes)


def test_skypilot_gcp_host_price_with_a_comma_is_quarantined_with_its_reason(tmp_path: Path) -> None:
    """A host VM price written with a comma is not read as a missing host row, and the offer is not dropped."""
    hosts = (PRICE_SAMPLES / "skypilot_v8_gcp_gpu_host_vms_subset.csv").read_text().splitlines()
    broken = tmp_path / "hosts.csv"  # line 13, a2-highgpu-1g us-central1-a: on-demand 0,73948, spot 0.36975
    broken.write_text("\n".join([hosts[0], hosts[12].replace(",0.73948,", ",\"0,73948\",")]) + "\n")
    with_on_demand_comma = normalised(skypilot.parse(
        PRICE_SAMPLES / "skypilot_v8_gcp_gpu_accelerators.csv", ctx("gcp", host_vms=str(broken))).records)
    a2 = with_on_demand_comma.filter(instance_type="a2-highgpu-1g", zone="us-central1-a")
    by_pricing = {row["pricing"]: row for row in a2.iter_rows(named=True)}
    assert by_pricing["on_demand"]["rejected_reason"].startswith("host VM price 0,73948 has a comma")
    # the spot prices both read: 1.4341 + 0.36975 = 1.80385, stored
    assert by_pricing["spot"]["rejected_reason"] is None
    assert by_pricing["spot"]["usd_per_hour"] == pytest.approx(1.80385, abs=1e-9)

    broken.write_text("\n".join([hosts[0], hosts[12].replace(",0.36975", ",\"0,36975\"")]) + "\n")
    with_spot_comma = normalised(skypilot.parse(
        PRICE_SAMPLES / "skypilot_v8_gcp_gpu_accelerators.csv", ctx("gcp", host_vms=str(broken))).records)
    a2 = with_spot_comma.filter(instance_type="a2-highgpu-1g", zone="us-central1-a")
    by_pricing = {row["pricing"]: row for row in a2.iter_rows(named=True)}
    assert by_pricing["on_demand"]["rejected_reason"] is None
    assert by_pricing["on_demand"]["usd_per_hour"] == pytest.approx(3.67339, abs=1e-9)  # 2.93391 + 0.73948
    assert by_pricing["spot"]["rejected_reason"].startswith("host VM spot price 0,36975 has a comma")


def test_skypilot_lambda_and_aws_gpu_overrides() -> None:
    lam = normalised(skypilot.parse(PRICE_SAMPLES / "skypilot_v8_lambda_gpu.csv", ctx("lambda")).records)
    gpu_of = dict(lam.select("instance_type", "gpu").unique().iter_rows())
    assert gpu_of["gpu_1x_a100"] == gpu_of["gpu_2x_a100"] == gpu_of["gpu_4x_a100"] == "A100-PCIe-40GB"
    assert gpu_of["gpu_8x_a100"] == gpu_of["gpu_1x_a100_sxm4"] == "A100-40GB"
    assert gpu_of["gpu_1x_h100_pcie"] == "H100-PCIe"
    assert gpu_of["gpu_1x_h100_sxm5"] == "H100-SXM"
    assert gpu_of["gpu_1x_rtx6000"] == "Quadro-RTX-6000"  # upper-case RTX6000 is Lambda's Turing part
    aws = normalised(skypilot.parse(PRICE_SAMPLES / "skypilot_v8_aws_gpu_subset.csv", ctx("aws")).records)
    gpu_of = dict(aws.select("instance_type", "gpu").unique().iter_rows())
    assert gpu_of["p3dn.24xlarge"] == "V100-32GB"  # GpuInfo Name 'V100' with 32768 MiB
    assert gpu_of["p3.2xlarge"] == "V100-16GB"
    p5 = aws.filter(instance_type="p5.48xlarge", region="us-east-1", pricing="on_demand")
    # 55.04 USD per instance-hour / 8 H100 = 6.88 USD per GPU-hour, in every us-east-1 zone.
    assert set(p5["usd_per_hour"]) == {55.04}
    assert p5.height == 7  # use1-atl2-az1 and use1-az1 ... use1-az6
    assert p5["usd_per_gpu_hour"].to_list() == pytest.approx([6.88] * 7)


def test_skypilot_azure_nd96isr_h100_count_defect_is_corrected() -> None:
    rows = normalised(skypilot.parse(PRICE_SAMPLES / "skypilot_v6_azure_gpu.csv", ctx("azure")).records)
    nd = rows.filter(instance_type="Standard_ND96isr_H100_v5", pricing="on_demand")
    assert set(nd["gpu_count"]) == {8.0}  # the catalog says 12; the override table says 8
    first = nd.row(0, named=True)
    assert first["usd_per_gpu_hour"] == pytest.approx(first["usd_per_hour"] / 8)


# --- Price history ---------------------------------------------------------------------------------


def test_aws_daily_history_needs_a_region_and_skips_empty_rows() -> None:
    path = PRICE_SAMPLES / "aws_p5.48xlarge_us-east-1_ondemand_daily_pricing_api.csv"
    with pytest.raises(AdapterError, match="no region column"):
        price_history.parse(path, ctx("aws"))
    result = price_history.parse(path, ctx("aws", region="us-east-1"))
    # 500 data rows; `cut -d, -f3 | sort | uniq -c`: 13 empty, 44 x 98.32, 443 x 55.04.
    assert result.skipped_by_reason == {price_history.EMPTY_ROW: 13}
    assert dict(result.records.group_by("usd_per_hour").len().iter_rows()) == {98.32: 44, 55.04: 443}
    assert set(result.records["region"]) == {"us-east-1"}


def test_cyclenerd_history_on_demand_and_spot_rows() -> None:
    result = price_history.parse(PRICE_SAMPLES / "gcp_gpu_vm_price_history_cyclenerd_quarterly.csv", ctx("gcp"))
    # 12,676 rows, 1,418 of them with an empty hour_spot_usd: 12,676 + (12,676 - 1,418) = 23,934 records.
    assert result.records.height == 23_934
    rows = normalised(result.records)
    latest = rows.filter(instance_type="a2-highgpu-1g", region="us-central1").filter(
        pl.col("observed_at") == datetime(2026, 7, 30, tzinfo=UTC)
    )
    assert dict(latest.select("pricing", "usd_per_hour").iter_rows()) == {"on_demand": 3.673385, "spot": 1.92802}
    # Case matters: Cyclenerd's lower-case rtx6000 (G4) is the RTX PRO 6000 Server, not Lambda's RTX6000.
    assert set(rows.filter(gpu_name="rtx6000")["gpu"]) == {"RTX-PRO-6000-Server"}


# --- Owned -----------------------------------------------------------------------------------------


def test_owned_example_carries_energy_columns() -> None:
    rows = normalised(owned.parse(PRICE_SAMPLES / "owned_example.csv", ctx("owned")).records)
    node = rows.row(0, named=True)
    # 8 x H100 at 1.85 USD per GPU-hour amortised = 14.80 USD per node-hour; energy carried, not added.
    assert (node["gpu"], node["gpu_count"], node["region"], node["instance_type"]) == (
        "H100-SXM",
        8,
        "example-lab-eu",
        "dgx-h100-node",
    )
    assert node["usd_per_hour"] == pytest.approx(14.8)
    assert node["usd_per_gpu_hour"] == pytest.approx(1.85)
    assert (node["electricity_usd_per_kwh"], node["pue"], node["source_line"]) == (0.21, 1.3, 5)
    assert rows.row(1, named=True)["instance_type"] == "owned-4xA100-80GB"  # default name


def comma_message(field: str, text: str) -> str:
    return (f"{field} {text} has a comma: a decimal comma or a thousands separator, which cannot be told apart; "
            f"write the {field} with a point and no separator (e.g. 3.67)")


def test_a_number_with_a_comma_is_quarantined_saying_why_in_every_format(tmp_path: Path) -> None:
    """The formats the CLI test (tests/reliability/test_bad_night_3.py) does not feed: one price written with a
    comma each, never read as another number."""
    import json

    from tasks.providers import lambda_cloud as lambda_api

    spot = tmp_path / "spot.tsv"
    spot.write_text("euw3-az2\tg4dn.4xlarge\tLinux/UNIX\t0,466400\t2022-05-31T18:20:41+00:00\n", encoding="utf-8")
    azure_items = json.loads((PRICE_SAMPLES / "azure_retail_prices_gpu_westus.json").read_text(encoding="utf-8"))
    azure_items["Items"][0]["retailPrice"] = "1,10"
    azure = tmp_path / "azure.json"
    azure.write_text(json.dumps(azure_items), encoding="utf-8")
    lam = tmp_path / "lambda.json"
    lam.write_text(json.dumps({"data": {"gpu_1x_a100": {
        "instance_type": {"name": "gpu_1x_a100", "description": "1x A100 (40 GB SXM4)",
                          "gpu_description": "A100 (40 GB SXM4)", "price_cents_per_hour": "129,5",
                          "specs": {"vcpus": 30, "memory_gib": 200, "gpus": 1}},
        "regions_with_capacity_available": [{"name": "us-east-1", "description": "Virginia, USA"}]}}}),
        encoding="utf-8")
    # the offer file's in-scope g5.48xlarge row (as in the test above) priced "21,30264"
    lines = (PRICE_SAMPLES / "aws_pricelist_ec2_offer_index_sample_v20250912225308.csv").read_text().splitlines()
    g5 = next(line for line in lines if "g5.48xlarge" in line).replace('"Dedicated"', '"Shared"')
    g5 = g5.replace('"SUSE"', '"Linux"').replace('"UnusedCapacityReservation"', '"Used"')
    offer = tmp_path / "offer.csv"
    offer.write_text("\n".join([*lines[:6], g5.replace('"21.3026400000"', '"21,3026400000"')]) + "\n")
    cases = [
        (aws_offer.parse(offer, ctx("aws")).records, "price", "21,3026400000"),
        (aws_spot.parse(spot, ctx("aws")).records, "price", "0,466400"),
        (azure_retail.parse(azure, ctx("azure")).records, "price", "1,10"),
        (lambda_api.parse(lam, ctx("lambda")).records, "price_cents_per_hour", "129,5"),
    ]
    for records, field, text in cases:
        flagged = records.filter(pl.col("rejected_reason") == comma_message(field, text))
        assert flagged.height == 1 and flagged["usd_per_hour"].is_null().all(), (field, records)
