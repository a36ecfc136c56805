"""Commitment prices (AWS Reserved terms, Azure reservations, GCP committed use), from the real sample files
through the ingest into the warehouse, against hand arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from tasks.ingest.landing import landed_lines
from tasks.prices.adapter import AdapterContext
from tasks.prices.ingest import normalise
from tasks.providers import aws as aws_offer
from tasks.providers import gcp as gcp_billing
from tasks.providers.azure import NO_SHAPE
from tests import configured
from tests.conftest import PRICE_SAMPLES
from tests.prices.helpers import ingest, source

OFFER_CSV = PRICE_SAMPLES / "aws_pricelist_ec2_offer_index_sample_v20250912225308.csv"
OFFER_JSON = PRICE_SAMPLES / "aws_pricelist_ec2_offer_json_excerpt_opencost.json"
AZURE = PRICE_SAMPLES / "azure_retail_prices_gpu_westus.json"
GCP_SKUS = PRICE_SAMPLES / "gcp_billing_catalog_skus_gpu_trimmed_cromwell-monitor.json"
NOW = datetime(2026, 11, 30, tzinfo=UTC)
UNKNOWN_GPU = (
    "expect_column_values_to_not_be_null(gpu): unknown GPU: the name is not in the alias table "
    "(data/reference/gpu_aliases.csv)"
)


@pytest.fixture(scope="module")
def aws_terms() -> pl.DataFrame:
    """The bundled offer CSV's Reserved terms, paired as the ingest pairs them, priced by the normalisation."""
    terms = aws_offer.read_terms(OFFER_CSV, AdapterContext("aws", NOW, configured.resources().reference,
                                                           configured.settings().validation.prices))
    return terms.join(normalise(terms, configured.aliases(), "offer.csv", "sha", NOW, configured.overrides()).select(
        "source_line", "term_hours", "usd_per_hour"
    ), on="source_line")


def term(priced: pl.DataFrame, instance_type: str, years: float, option: str, offering_class: str) -> dict:
    [row] = priced.filter(
        instance_type=instance_type, term_years=years, purchase_option=option, offering_class=offering_class
    ).to_dicts()
    return row


def test_aws_reserved_terms_from_the_offer_csv_by_hand(aws_terms: pl.DataFrame) -> None:
    # The bundled offer CSV's 30 Reserved price dimensions (lines 7-17, 19-27, 41-50) are 19 terms (one SKU and
    # offer term code each) of two CPU instances, Windows with SQL Server, so out of the ranking's scope: the
    # term arithmetic is the same for a GPU instance. c6i.large 12 = 2 lease lengths x 3 options x 2 classes.
    assert aws_terms.height == 19
    assert dict(aws_terms.group_by("instance_type").len().iter_rows()) == {"c6i.large": 12, "m6id.2xlarge": 7}
    # c6i.large ap-northeast-1, 1yr No Upfront standard (line 9): one Hrs dimension, 0.23722 USD/h, no fee
    # -> 0 / 8760 + 0.23722 = 0.23722 USD/h effective; the term costs 0.23722 x 8760 = 2,078.05 USD.
    no_upfront = term(aws_terms, "c6i.large", 1, "no_upfront", "standard")
    assert (no_upfront["source_line"], no_upfront["term_hours"]) == (9, 8760)
    assert (no_upfront["upfront_usd"], no_upfront["recurring_usd_per_hour"]) == (0.0, 0.23722)
    assert no_upfront["usd_per_hour"] == pytest.approx(0.23722)
    # 1yr All Upfront standard (lines 10-11): Hrs 0.0 + Upfront Fee 2,033 -> 2,033 / 8,760 = 0.2320776 USD/h
    all_upfront = term(aws_terms, "c6i.large", 1, "all_upfront", "standard")
    assert all_upfront["source_line"] == 10
    assert (all_upfront["upfront_usd"], all_upfront["recurring_usd_per_hour"]) == (2033.0, 0.0)
    assert all_upfront["usd_per_hour"] == pytest.approx(0.2320776, rel=1e-6)
    # 3yr Partial Upfront standard (lines 7-8): 2,750 / 26,280 + 0.10463 = 0.1046423 + 0.10463 = 0.2092723 USD/h
    partial = term(aws_terms, "c6i.large", 3, "partial_upfront", "standard")
    assert (partial["pricing"], partial["term_hours"]) == ("reserved_3y", 26280)
    assert partial["usd_per_hour"] == pytest.approx(0.2092723, rel=1e-6)
    # m6id.2xlarge ca-central-1: 1yr No Upfront standard 1.6614 USD/h (line 43); All Upfront 14,359 / 8,760
    # = 1.6391553 (lines 44-45)
    assert term(aws_terms, "m6id.2xlarge", 1, "no_upfront", "standard")["usd_per_hour"] == pytest.approx(1.6614)
    assert term(aws_terms, "m6id.2xlarge", 1, "all_upfront", "standard")["usd_per_hour"] == pytest.approx(
        1.6391553, rel=1e-6
    )


def test_a_term_cut_off_before_its_upfront_fee_has_no_fee(aws_terms: pl.DataFrame) -> None:
    # The sample ends (line 50) with m6id.2xlarge's 1yr Partial Upfront standard Hrs dimension (0.82276); its
    # Upfront Fee line is not in the sample: the term's fee is unknown (an in-scope one is quarantined below).
    missing = aws_terms.filter(pl.col("upfront_usd").is_null())
    assert missing.select("instance_type", "source_line", "purchase_option", "recurring_usd_per_hour").rows() == [
        ("m6id.2xlarge", 50, "partial_upfront", 0.82276)
    ]


def gpu_term(tmp_path: Path, fee: str | None) -> Path:
    """The real c6i.large 1yr All Upfront standard term (lines 10-11), moved to a g5.48xlarge, Linux, Shared,
    no SQL Server: a term in the ranking's scope (the sample has none); `fee` replaces its 2,033 USD fee."""
    lines = OFFER_CSV.read_text().splitlines()
    rows = [line for line in lines if "6QCMYABX3D" in line and "c6i.large" in line]
    assert len(rows) == 2
    edited = []
    for row in rows:
        row = row.replace("c6i.large", "g5.48xlarge").replace('"Windows"', '"Linux"').replace('"SQL Web"', '"NA"')
        row = row.replace('"Dedicated"', '"Shared"')
        if "Upfront Fee" in row:
            if fee is None:
                continue
            row = row.replace('"2033"', f'"{fee}"')
        edited.append(row)
    path = tmp_path / "offer.csv"
    path.write_text("\n".join([*lines[:6], *edited]) + "\n")
    return path


def test_an_in_scope_reserved_term_lands_with_its_effective_price(con, tmp_path: Path) -> None:
    [outcome] = ingest(con, [source(gpu_term(tmp_path, "2033"), "aws", "aws-offer")])
    assert (outcome.rows_read, outcome.rows_loaded, outcome.rows_skipped) == (1, 1, 0)  # 2 dimensions, 1 term
    [row] = con.execute(
        "select pricing, purchase_option, offering_class, term_hours, upfront_usd, recurring_usd_per_hour,"
        " usd_per_hour, usd_per_gpu_hour, source_line from core.prices_current"
    ).fetchall()
    # 2,033 / 8,760 = 0.2320776 USD per instance-hour; g5.48xlarge has 8 A10G: 0.0290097 USD per GPU-hour
    assert row[:6] == ("reserved_1y", "all_upfront", "standard", 8760, 2033, 0)
    assert row[6] == pytest.approx(0.2320776, rel=1e-6)
    assert row[7] == pytest.approx(0.2320776 / 8, rel=1e-6)
    assert row[8] == 7  # the term's first dimension: 5 preamble lines, the header, then it
    # the row's line in the landed file is the term's first dimension, as the file holds it
    [(sha,)] = con.execute("select content_sha256 from core.price_observations").fetchall()
    assert "g5.48xlarge" in landed_lines(con, sha)[7]


@pytest.mark.parametrize(
    ("fee", "reason"),
    [
        ("-5", "upfront fee cannot be negative"),
        (None, "reserved All Upfront term without its Upfront Fee (unit Quantity)"),
    ],
)
def test_a_broken_reserved_term_is_quarantined_with_the_reason(con, tmp_path: Path, fee, reason) -> None:
    [outcome] = ingest(con, [source(gpu_term(tmp_path, fee), "aws", "aws-offer")])
    assert (outcome.rows_loaded, outcome.rows_quarantined) == (0, 1)
    [(check, line)] = con.execute("select failed_check, source_line from quarantine.rejected_rows").fetchall()
    assert reason in check and line == 7


def test_azure_reservations_are_priced_over_their_term(con) -> None:
    [outcome] = ingest(con, [source(AZURE, "azure", "azure-retail")], at=NOW)
    rows = con.execute(
        "select pricing, usd_per_hour, usd_per_gpu_hour, term_hours, upfront_usd, recurring_usd_per_hour,"
        " purchase_option from core.prices_current where instance_type = 'Standard_ND96isr_H100_v5'"
        " order by pricing"
    ).fetchall()
    by_pricing = {r[0]: r[1:] for r in rows}
    # Items 452-454: reservationTerm 1 Year 716,588 / 3 Years 1,474,603 / 5 Years 2,239,336 USD, unit "1 Hour"
    # though each price is the whole term's. 716,588 / 8,760 = 81.802283 USD/h (8 H100: 10.225285 per GPU-hour);
    # 1,474,603 / 26,280 = 56.111225; 2,239,336 / 43,800 = 51.126393. Pay-as-you-go is 127.816 (item 451).
    one_year = by_pricing["reserved_1y"]
    assert one_year[0] == pytest.approx(81.802283, rel=1e-8) and one_year[1] == pytest.approx(10.225285, rel=1e-7)
    assert one_year[2:] == (8760, 716588, 0, "term_total")
    assert by_pricing["reserved_3y"][0] == pytest.approx(56.111225, rel=1e-7)
    assert by_pricing["reserved_5y"][0] == pytest.approx(51.126393, rel=1e-7)
    assert by_pricing["on_demand"][0] == 127.816 and by_pricing["on_demand"][2] is None
    # 92 reservations (1 Year 44, 3 Years 44, 5 Years 4): 52 priced; quarantined like their pay-as-you-go rows
    # are the 30 of the 15 RTX PRO 6000 sizes with no azure_vm_gpus.csv row and the 10 of the 5 NV*_V710_v5
    # sizes (GPU not in the alias table).
    counts = dict(con.execute(
        "select pricing, count(*) from core.price_observations where pricing like 'reserved%' group by all"
    ).fetchall())
    assert counts == {"reserved_1y": 24, "reserved_3y": 24, "reserved_5y": 4}
    assert outcome.rows_read == 133 + 92
    assert outcome.quarantined_by_reason == {
        NO_SHAPE: 52 + 30,  # 26 sizes x (on-demand + spot), + 15 sizes x 2 terms
        UNKNOWN_GPU: 10 + 10,
    }


def test_ebs_storage_prices_land_for_checkpoint_storage(con) -> None:
    [outcome] = ingest(con, [source(OFFER_JSON, "aws", "aws-offer")], at=NOW)
    # 3 price dimensions: the gp3 volume (read and loaded), p3.8xlarge Windows BYOL and m5.large's Upfront Fee
    # (skipped: tests/prices/test_adapters.py)
    assert (outcome.rows_read, outcome.rows_loaded, outcome.rows_quarantined) == (1, 1, 0)
    rows = con.execute(
        "select provider, region, storage_type, usd_per_gb_month, observed_at from core.storage_prices_current"
    ).fetchall()
    # "$0.08 per GB-month of General Purpose (gp3) provisioned storage - US East (Ohio)", published 2023-03-22
    assert rows == [("aws", "us-east-2", "gp3", 0.08, datetime(2023, 3, 22, 14, 56, 51, tzinfo=UTC))]
    assert con.execute("select count(*) from core.price_observations").fetchone() == (0,)
    assert con.execute("select count(landed_path) from raw.ingested_files").fetchone() == (1,)


@pytest.mark.parametrize(
    ("price", "reason"),
    [
        ("0.0000000000", "storage price: must be positive, finite and at most 10.0 USD per GB-month"),
        ("80.0000000000", "storage price: must be positive, finite and at most 10.0 USD per GB-month"),
        ("", "storage price: no price in the source record"),
    ],
)
def test_a_broken_storage_price_is_quarantined_with_the_reason(con, tmp_path: Path, price, reason) -> None:
    path = tmp_path / "offer.json"
    text = OFFER_JSON.read_text()
    assert text.count('"USD" : "0.0800000000"') == 1  # the gp3 volume's price (line 126)
    path.write_text(text.replace('"USD" : "0.0800000000"', f'"USD" : "{price}"'))
    [outcome] = ingest(con, [source(path, "aws", "aws-offer")], at=NOW)
    assert (outcome.rows_read, outcome.rows_loaded, outcome.rows_quarantined) == (1, 0, 1)
    assert outcome.quarantined_by_reason == {reason: 1}
    assert con.execute("select count(*) from core.storage_price_observations").fetchone() == (0,)


def test_gcp_commitment_skus_are_read_as_commitment_parts() -> None:
    skus = gcp_billing.read_skus(GCP_SKUS)
    parts, _ = gcp_billing.classify(skus)
    # "Commitment v1: Nvidia H100 80GB Plus GPU running in Americas for 3 Years", usageType Commit3Yr,
    # 4 + 498983869e-9 USD per GPU-hour, in us-central1 and us-west1.
    commit = parts.filter(pl.col("pricing") == "reserved_3y")
    assert commit.select("kind", "name", "region").rows() == [
        ("gpu", "Nvidia H100 80GB Plus", "us-central1"),
        ("gpu", "Nvidia H100 80GB Plus", "us-west1"),
    ]
    assert commit["price"].to_list() == pytest.approx([4.498983869, 4.498983869])
    # Composed only with A3Plus core and RAM commitment SKUs of the same term, which this file lacks.
    records = gcp_billing.parse(GCP_SKUS, AdapterContext("gcp", NOW, configured.resources().reference,
                                                         configured.settings().validation.prices)).records
    assert records.filter(pl.col("pricing") == "reserved_3y").height == 0


def test_a_composed_gcp_commitment_is_billed_every_hour_of_its_term(tmp_path: Path) -> None:
    # The file has the GPU's commitment SKU but not A3Plus core and RAM commitment SKUs: its A3Plus Spot core
    # (0.01481 USD per vCPU-hour) and RAM (0.001289 USD per GiB-hour) SKUs are copied as 3-year commitment SKUs
    # ("Commitment v1: A3Plus Cpu in Americas for 3 Years", usageType Commit3Yr) to compose a3-megagpu-8g
    # (8 GPUs, 208 vCPUs, 1,872 GiB: gcp_machine_shapes.csv): 8 x 4.498983869 + 208 x 0.01481 + 1,872 x 0.001289
    # = 35.991870952 + 3.08048 + 2.413008 = 41.485358952 USD per hour, nothing upfront, over 26,280 hours.
    import json

    skus = json.loads(GCP_SKUS.read_text())
    spot_parts = [s for s in skus if s["description"].startswith("Spot Preemptible A3Plus Instance")]
    assert len(spot_parts) == 2
    for sku in spot_parts:
        kind = "Cpu" if "Core" in sku["description"] else "Ram"
        sku = json.loads(json.dumps(sku))
        sku["description"] = f"Commitment v1: A3Plus {kind} in Americas for 3 Years"
        sku["category"]["usageType"] = "Commit3Yr"
        skus.append(sku)
    path = tmp_path / "skus.json"
    path.write_text(json.dumps(skus))
    records = gcp_billing.parse(path, AdapterContext("gcp", NOW, configured.resources().reference,
                                                     configured.settings().validation.prices)).records
    rows = normalise(records, configured.aliases(), "skus.json", "sha", NOW,
                     configured.overrides()).filter(pl.col("pricing") == "reserved_3y")
    hourly = 41.485358952
    assert sorted(rows["region"]) == ["us-central1", "us-west1"]
    for row in rows.iter_rows(named=True):
        assert (row["instance_type"], row["term_hours"], row["upfront_usd"]) == ("a3-megagpu-8g", 26280, 0)
        assert row["purchase_option"] == "no_upfront"
        assert row["recurring_usd_per_hour"] == pytest.approx(hourly)
        assert row["usd_per_hour"] == pytest.approx(hourly)  # 0 / 26,280 + the hourly part
