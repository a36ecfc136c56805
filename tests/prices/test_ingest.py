"""Price ingest into a real warehouse: every sample file, history, idempotence, quarantine of bad
rows and bad files, and "the price on date D" as a query."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tasks import config_files
from tasks.ingest.landing import landed_lines
from tasks.sources import configured_price_sources
from tasks.warehouse import migrate, query, warehouse
from tests.conftest import PRICE_SAMPLES
from tests.prices.helpers import ingest, source, table_counts

SAMPLE_FILES = sorted(p.name for p in PRICE_SAMPLES.iterdir() if p.name != "SOURCES.md")


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[duckdb.DuckDBPyConnection, list]]:
    """One warehouse with every configured sample source ingested once (read by several tests)."""
    path = tmp_path_factory.mktemp("prices") / "warehouse.duckdb"
    with warehouse(path) as con:
        outcomes = ingest(con, configured_price_sources(config_files.sources()))
        yield con, outcomes


def test_every_sample_file_is_configured_or_an_example() -> None:
    configured = {s.path.name for s in configured_price_sources(config_files.sources())}
    # The host-VM file is read through the GCP accelerator source's `host_vms` option; the owned file is
    # an example with made-up figures, deliberately not ingested by default.
    assert set(SAMPLE_FILES) - configured == {"skypilot_v8_gcp_gpu_host_vms_subset.csv", "owned_example.csv"}


def test_every_configured_file_loads_and_quarantined_rows_say_why(loaded) -> None:
    con, outcomes = loaded
    assert len(outcomes) == 13
    assert {o.status for o in outcomes} == {"loaded"}
    reasons = [r[0] for r in con.execute("select distinct failed_check from quarantine.rejected_rows").fetchall()]
    assert reasons and all(len(reason) > 20 for reason in reasons)
    by_file = {Path(o.source_file).name: o for o in outcomes}
    # AWS daily: 500 rows - 13 empty = 487 observations; the Cyclenerd file: 23,934 (see test_adapters).
    assert by_file["aws_p5.48xlarge_us-east-1_ondemand_daily_pricing_api.csv"].rows_loaded == 487
    assert by_file["gcp_gpu_vm_price_history_cyclenerd_quarterly.csv"].rows_loaded == 23_934
    # 14 on-demand rows + 19 reserved terms (30 price dimensions), all out of scope (tests/prices/test_adapters.py)
    assert by_file["aws_pricelist_ec2_offer_index_sample_v20250912225308.csv"].rows_skipped == 33


def test_p5_48xlarge_us_east_1_on_demand(loaded) -> None:
    con, _ = loaded
    rows = con.execute(
        "select distinct usd_per_hour, usd_per_gpu_hour from core.prices_current "
        "where provider = 'aws' and instance_type = 'p5.48xlarge' and region = 'us-east-1' and pricing = 'on_demand'"
    ).fetchall()
    # SkyPilot rows (every zone) and the daily file's newest row (2026-08-22) all say 55.04; / 8 GPUs = 6.88.
    assert rows == [(55.04, pytest.approx(6.88))]


def test_gcp_a2_highgpu_1g_us_central1_from_both_sources(loaded) -> None:
    con, _ = loaded
    prices = dict(
        con.execute(
            # Observations, not prices_current: the billing excerpt (2023) is superseded there by the newer
            # Cyclenerd snapshot of the same offer (region-wide, no zone).
            "select regexp_extract(source_file, '[^/]*$'), min(usd_per_hour) from core.price_observations "
            "where instance_type = 'a2-highgpu-1g' and region = 'us-central1' and pricing = 'on_demand' group by 1"
        ).fetchall()
    )
    # SkyPilot: 2.93391 + 0.73948 = 3.67339. Billing SKUs: 2.933908 + 12 x 0.031611 + 85 x 0.004237 = 3.673385.
    assert prices["skypilot_v8_gcp_gpu_accelerators.csv"] == pytest.approx(3.67339, abs=1e-9)
    assert prices["gcp_billing_catalog_skus_page_excerpt_opencost.json"] == pytest.approx(3.673385, abs=1e-9)


def test_price_on_date_shows_the_p5_cut(loaded) -> None:
    con, _ = loaded

    def price_on(day: str) -> list[tuple]:
        frame = query(
            con,
            "prices/price_on_date",
            {
                "on_date": dt.date.fromisoformat(day),
                "provider": "aws",
                "instance_type": "p5.48xlarge",
                "pricing": "on_demand",
            },
        ).pl()
        return frame.filter(pl.col("zone").is_null()).select("region", "usd_per_hour").rows()

    # Daily file: 2025-06-04T07:23:25 98.32, then 2025-06-05T07:22:36 55.04 (the AWS price cut).
    assert price_on("2025-06-04") == [("us-east-1", 98.32)]
    assert price_on("2025-06-05") == [("us-east-1", 55.04)]
    assert price_on("2025-04-22") == []  # before the first priced row (2025-04-23T18:52:57)


def test_ingesting_the_same_files_twice_changes_nothing(con) -> None:
    sources = [
        source(PRICE_SAMPLES / "skypilot_v8_lambda_gpu.csv", "lambda", "skypilot"),
        source(PRICE_SAMPLES / "azure_retail_prices_gpu_westus.json", "azure", "azure-retail"),
        source(
            PRICE_SAMPLES / "aws_p5.48xlarge_us-east-1_ondemand_daily_pricing_api.csv",
            "aws",
            "price-history",
            region="us-east-1",
        ),
        source(PRICE_SAMPLES / "gcp_billing_catalog_skus_page_excerpt_opencost.json", "gcp", "gcp-billing"),
    ]
    ingest(con, sources)
    before = table_counts(con)
    again = ingest(con, sources)
    assert {o.status for o in again} == {"already_ingested"}
    assert table_counts(con) == before
    assert before["core.price_observations"] > 0


def test_a_changed_file_adds_observations_and_current_is_the_newest(con, tmp_path: Path) -> None:
    original = PRICE_SAMPLES / "aws_p5.48xlarge_us-east-1_ondemand_daily_pricing_api.csv"
    changed = tmp_path / original.name
    # The same file plus one later day at a new price.
    changed.write_text(original.read_text().rstrip("\n") + "\n2026-08-23T07:30:00,p5.48xlarge,50.00\n")
    ingest(con, [source(original, "aws", "price-history", region="us-east-1")])
    first = table_counts(con)["core.price_observations"]
    outcomes = ingest(con, [source(changed, "aws", "price-history", region="us-east-1")])
    assert outcomes[0].status == "loaded"
    # The changed file is a new file: all its 488 priced rows are new observations (487 + 1).
    assert table_counts(con)["core.price_observations"] == first + 488
    current = con.execute(
        "select usd_per_hour, observed_at from core.prices_current where instance_type = 'p5.48xlarge'"
    ).fetchall()
    assert current == [(50.0, dt.datetime(2026, 8, 23, 7, 30, tzinfo=dt.UTC))]


def test_price_move_beyond_the_factor_is_quarantined(con, tmp_path: Path) -> None:
    lines = (PRICE_SAMPLES / "skypilot_v8_aws_gpu_subset.csv").read_text().splitlines()
    row = next(line for line in lines if line.startswith("p5.48xlarge") and ",us-east-1,use1-az2," in line)
    # One real row, priced $32.77 then $0.0328 (the catalog error the issue cites): 32.77 / 0.0328 = 999 > 5.
    before, after = tmp_path / "before.csv", tmp_path / "after.csv"
    before.write_text(lines[0] + "\n" + row.replace(",55.04,19.253100,", ",32.77,,") + "\n")
    after.write_text(lines[0] + "\n" + row.replace(",55.04,19.253100,", ",0.0328,,") + "\n")
    first, second = ingest(con, [source(before, "aws", "skypilot"), source(after, "aws", "skypilot")])
    assert (first.rows_loaded, second.rows_loaded, second.rows_quarantined) == (1, 0, 1)
    check = con.execute(
        "select failed_check from quarantine.rejected_rows where source_file = ?", [str(after)]
    ).fetchone()
    assert "price moved more than the allowed factor" in check[0]
    current = con.execute("select usd_per_hour from core.prices_current where instance_type = 'p5.48xlarge'").fetchall()
    assert current == [(32.77,)]


CORRUPTIONS = {
    # format: (provider, sample file, how it is broken, words the error must contain)
    "skypilot": ("aws", "skypilot_v8_aws_gpu_subset.csv", "wrong_columns", "missing column"),
    "aws-offer": ("aws", "aws_pricelist_ec2_offer_json_excerpt_opencost.json", "truncate", "not valid JSON"),
    "aws-spot": ("aws", "aws_spot_price_history_2022-05-31_gpu_az_ids.tsv", "drop_columns", "tab-separated columns"),
    "azure-retail": ("azure", "azure_retail_prices_gpu_westus.json", "truncate", "not valid JSON"),
    "gcp-billing": ("gcp", "gcp_billing_catalog_skus_page_excerpt_opencost.json", "empty", "empty"),
    "price-history": ("gcp", "gcp_gpu_vm_price_history_cyclenerd_quarterly.csv", "latin1", "not UTF-8"),
    "owned": ("owned", "owned_example.csv", "wrong_columns", "missing column"),
}


def corrupt(original: Path, how: str, target: Path) -> Path:
    text = original.read_text(encoding="utf-8")
    if how == "truncate":
        target.write_text(text[: len(text) // 2])
    elif how == "empty":
        target.write_bytes(b"")
    elif how == "latin1":
        head = text.splitlines()[:20]
        head[5] = head[5].replace("asia", "asié")
        target.write_bytes("\n".join(head).encode("latin-1"))
    elif how == "wrong_columns":
        lines = text.splitlines()
        header_index = next(i for i, line in enumerate(lines) if not line.startswith("#"))
        lines[header_index] = lines[header_index].replace("Price", "Cost").replace("gpu_count", "gpus")
        target.write_text("\n".join(lines) + "\n")
    elif how == "drop_columns":
        target.write_text("\n".join("\t".join(line.split("\t")[:3]) for line in text.splitlines()) + "\n")
    return target


@pytest.mark.parametrize("fmt", sorted(CORRUPTIONS))
def test_a_corrupted_file_is_quarantined_and_the_others_load(con, tmp_path: Path, fmt: str) -> None:
    provider, name, how, words = CORRUPTIONS[fmt]
    broken = corrupt(PRICE_SAMPLES / name, how, tmp_path / f"broken_{name}")
    good = source(PRICE_SAMPLES / "gcp_billing_catalog_skus_page_excerpt_opencost.json", "gcp", "gcp-billing")
    bad_outcome, good_outcome = ingest(con, [source(broken, provider, fmt), good])
    assert bad_outcome.status == "quarantined"
    assert broken.name in bad_outcome.error and words in bad_outcome.error
    assert good_outcome.status == "loaded" and good_outcome.rows_loaded == 15
    stored = con.execute("select source_file, error from quarantine.rejected_files").fetchall()
    assert stored == [(str(broken), bad_outcome.error)]


def test_a_missing_file_is_quarantined_and_the_others_load(con, tmp_path: Path) -> None:
    missing = tmp_path / "not_there.csv"
    good = source(PRICE_SAMPLES / "gcp_billing_catalog_skus_page_excerpt_opencost.json", "gcp", "gcp-billing")
    bad_outcome, good_outcome = ingest(con, [source(missing, "aws", "skypilot"), good])
    assert bad_outcome.status == "quarantined"
    assert bad_outcome.error.startswith("not_there.csv: file not found")
    assert good_outcome.rows_loaded == 15
    assert con.execute("select count(*) from quarantine.rejected_files").fetchone() == (1,)


def test_owned_file_stores_energy_columns(con) -> None:
    ingest(con, [source(PRICE_SAMPLES / "owned_example.csv", "owned", "owned")])
    rows = con.execute(
        "select instance_type, usd_per_hour, electricity_usd_per_kwh, pue from core.prices_current "
        "where provider = 'owned' order by instance_type"
    ).fetchall()
    # 8 x 1.85 = 14.80; 4 x 0.95 = 3.80 USD per node-hour.
    assert rows == [
        ("dgx-h100-node", pytest.approx(14.8), 0.21, 1.3),
        ("owned-4xA100-80GB", pytest.approx(3.8), 0.09, 1.5),
    ]


def test_gcp_host_vms_option_is_what_prices_the_accelerators(con) -> None:
    accelerators = PRICE_SAMPLES / "skypilot_v8_gcp_gpu_accelerators.csv"
    without = ingest(con, [source(accelerators, "gcp", "skypilot")])[0]
    # Without the host catalog no accelerator row has a host price: all 747 rows quarantined, none loaded.
    assert (without.rows_loaded, without.rows_quarantined) == (0, 747)


def test_no_bundled_offer_is_judged_a_per_gpu_price_read_per_instance(loaded) -> None:
    """Every configured file in its configured order: no row falls below min_share_of_gpu_median of its GPU's
    median (sql/prices/plausibility.sql); the check quarantines no real offer."""
    con, _ = loaded
    assert con.execute("select count(*) from quarantine.rejected_rows "
                       "where failed_check like '%share_of_gpu_median%'").fetchall() == [(0,)]


def test_staged_rows_never_reach_the_warehouse_file_and_lines_count_from_the_header(loaded) -> None:
    """Staging is TEMP tables of the ingest's transaction: none is left, and the warehouse has no staging schema.
    Row keys come from rowids, which DuckDB starts at a large base inside a transaction: the SkyPilot AWS sample
    (494 GPU rows below its header, 447 with a spot price) must still give lines 2..495, one raw record per
    on-demand offer and one more per spot offer: 494 + 447 = 941."""
    con, _ = loaded
    left = con.execute(
        "select table_name from duckdb_tables() where table_name like 'staging%' or schema_name = 'staging' "
        "union all select view_name from duckdb_views() where view_name like 'staging%' "
        "union all select schema_name from duckdb_schemas() where schema_name = 'staging'"
    ).fetchall()
    assert left == []
    # no view made during an ingest is stored: the warehouse file holds the views of its DDL only
    stored_views = "select view_name from duckdb_views() where not internal and not temporary order by 1"
    with duckdb.connect() as fresh:
        migrate(fresh)
        ddl_views = fresh.execute(stored_views).fetchall()
    assert con.execute(stored_views).fetchall() == ddl_views
    # the file landed whole (a header and 494 lines); each stored offer's line names its instance type
    rows = con.execute("select content_sha256, source_line, instance_type from core.price_observations "
                       "where source_file like '%skypilot_v8_aws%'").fetchall()
    lines = landed_lines(con, rows[0][0])
    assert len(lines) == 495
    assert all(lines[line].split(",")[0] == instance_type for _, line, instance_type in rows)


def test_identical_rows_collapse_to_the_first_and_rows_differing_in_one_value_stay() -> None:
    from tasks.prices.ingest import collapse_duplicates

    con = duckdb.connect()
    con.execute("""create temp table staging_file_rows as select * from (values
        (0, 2, 'p5.48xlarge', 'on_demand', 98.32, null),   -- first of three identical rows: kept
        (1, 3, 'p5.48xlarge', 'on_demand', 98.32, null),   -- identical to row 0 (line aside): dropped
        (2, 4, 'p5.48xlarge', 'spot',      98.32, null),   -- another pricing: kept
        (3, 5, 'p5.48xlarge', 'on_demand', 98.32, 'a'),    -- a value where row 0 has none: kept
        (4, 6, 'p5.48xlarge', 'on_demand', 98.32, null),   -- identical to row 0: dropped
        (5, 7, 'p5.48xlarge', 'spot',      98.33, null),   -- another price: kept
        (6, 8, 'p5.48xlarge', 'spot',      98.33, null)    -- identical to row 5: dropped
    ) v(_row_id, source_line, instance_type, pricing, usd_per_hour, zone)""")
    # 7 rows, 3 identical to an earlier one (1 and 4 of 0, 6 of 5)
    assert collapse_duplicates(con) == 3
    assert [r[0] for r in con.execute("select _row_id from staging_file_rows order by _row_id").fetchall()] == \
        [0, 2, 3, 5]


def test_a_history_row_without_a_readable_date_is_quarantined_not_dated_tonight(con, tmp_path: Path) -> None:
    """A dated list's row whose date cannot be read would otherwise be dated at ingest (the current lists' rule)
    and an old price would become tonight's."""
    daily = (PRICE_SAMPLES / "aws_p5.48xlarge_us-east-1_ondemand_daily_pricing_api.csv").read_text().splitlines()
    # header, 98.32 on 2025-04-23T18:52:57, then two rows dated wrongly (fault data): 23/04/2025 and an empty date
    broken_daily = tmp_path / "daily.csv"
    rows = [daily[0], daily[1], "23/04/2025,p5.48xlarge,50.00", ",p5.48xlarge,40.00"]
    broken_daily.write_text("\n".join(rows) + "\n")
    snapshots = (PRICE_SAMPLES / "gcp_gpu_vm_price_history_cyclenerd_quarterly.csv").read_text().splitlines()
    broken_snapshots = tmp_path / "snapshots.csv"  # the first row with its date written as a quarter
    broken_snapshots.write_text("\n".join([snapshots[0], snapshots[1].replace("2022-02-09", "2022Q1", 1)]) + "\n")
    spot = (PRICE_SAMPLES / "aws_spot_price_history_2022-05-31_gpu_az_ids.tsv").read_text().splitlines()
    broken_spot = tmp_path / "spot.tsv"  # the first row (Linux/UNIX) with its time zone spelled out
    broken_spot.write_text(spot[0].replace("+00:00", " UTC") + "\n")

    daily_out, snapshot_out, spot_out = ingest(con, [
        source(broken_daily, "aws", "price-history", region="us-east-1"),
        source(broken_snapshots, "gcp", "price-history"),
        source(broken_spot, "aws", "aws-spot"),
    ])
    # daily: 1 stored, 2 quarantined; snapshot row: on-demand only (no spot price) quarantined; spot: 1 quarantined
    assert (daily_out.rows_loaded, daily_out.rows_quarantined) == (1, 2)
    assert (snapshot_out.rows_loaded, snapshot_out.rows_quarantined) == (0, 1)
    assert (spot_out.rows_loaded, spot_out.rows_quarantined) == (0, 1)
    reasons = dict(con.execute(
        "select source_line, failed_check from quarantine.rejected_rows where source_file = ?", [str(broken_daily)]
    ).fetchall())
    assert reasons == {
        3: "timestamp '23/04/2025' is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS, UTC): the row's price has no date",
        4: "timestamp is empty: the row's price has no date",
    }
    (snapshot_reason,) = con.execute(
        "select failed_check from quarantine.rejected_rows where source_file = ?", [str(broken_snapshots)]
    ).fetchone()
    assert snapshot_reason.startswith("snapshot_commit_date '2022Q1' is not a date")
    (spot_reason,) = con.execute(
        "select failed_check from quarantine.rejected_rows where source_file = ?", [str(broken_spot)]
    ).fetchone()
    assert spot_reason.startswith("Timestamp '2022-05-31T18:20:41 UTC' is not a date")
    current = con.execute("select usd_per_hour from core.prices_current where instance_type = 'p5.48xlarge'").fetchall()
    assert current == [(98.32,)]  # neither 50.00 nor 40.00 became tonight's price
