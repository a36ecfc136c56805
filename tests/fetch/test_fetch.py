"""Fetching against the local replay server: pagination, conditional GET, and the provider-level
failures (429, 500, cut connection, HTML with 200). Plain functions, real HTTP, real warehouse."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from tasks.fetch.config import load_fetch_config
from tasks.fetch.run import fetch_once
from tasks.warehouse import warehouse
from tests import configured
from tests.fetch import replay

ALL = ["azure", "aws", "aws-spot", "gcp", "skypilot"]


def rows(sql: str, params: list | None = None) -> list[tuple]:
    with warehouse(configured.resources().warehouse) as con:
        return con.execute(sql, params or []).fetchall()


def by_name(report, name):
    return next(r for r in report.results if r.name == name)


def test_every_provider_is_paginated_and_ingested_and_unchanged_aws_is_not_downloaded_again(
    providers: replay.Replay, gpucost_home: Path
) -> None:
    report = fetch_once(load_fetch_config(), ALL, configured.resources(), configured.price_ingest())
    assert {r.name: r.status for r in report.results} == {p: "ok" for p in ALL}, report.results

    # Azure: 598 items in pages of 250 -> requests at $skip 0, 250, 500, each page ingested as it came.
    azure = providers.requests_to(r"/api/retail/prices$")
    assert [a.get("$skip") for _, a, _ in azure] == [None, "250", "500"]
    assert all(a["$filter"] == replay.AZURE_FILTER for _, a, _ in azure)
    azure_out = [o for o in report.outcomes if o.format == "azure-retail"]
    # The bundled file's figures (tests/prices/test_adapters.py works them out): 68 on-demand + 65 spot
    # Linux VM prices and 92 reservations read; 18 + 160 + 163 + 32 = 373 items out of scope.
    assert sum(o.rows_read for o in azure_out) == 133 + 92
    assert sum(o.rows_skipped for o in azure_out) == 373

    # GCP: page 2 asked for with page 1's real nextPageToken, the key sent as a header, never in the URL.
    gcp = providers.requests_to("/skus$")
    first_token = replay.gcp_pages()[0]["nextPageToken"]
    assert [a.get("pageToken") for _, a, _ in gcp] == [None, first_token]
    assert all(h["X-Goog-Api-Key"] == replay.GCP_KEY for _, _, h in gcp)
    assert not rows("select url from raw.downloads where url like ?", [f"%{replay.GCP_KEY}%"])
    # a2-highgpu-1g in us-central1 composed from the three SKUs of page 1 (data SOURCES.md):
    # 2.933908 + 12 x 0.031611 + 85 x 0.004237 = 3.673305 USD per hour.
    a2 = rows("select usd_per_hour from core.prices_current where provider = 'gcp' and instance_type = "
              "'a2-highgpu-1g' and region = 'us-central1' and pricing = 'on_demand'")
    assert a2 == [(pytest.approx(2.933908 + 12 * 0.031611 + 85 * 0.004237),)]

    # AWS: the region index, then both regions' offer files (21 and 10 rows of the bundled CSV, none a
    # Linux/Shared GPU price, so all counted as skipped): ap-northeast-1 = 1 on-demand row + 20 Reserved
    # price dimensions paired into 12 terms = 13 records; ca-central-1 = 10 dimensions = 7 terms.
    aws_out = {Path(o.source_file).parent.name: o for o in report.outcomes if o.format == "aws-offer"}
    assert {k: o.rows_skipped for k, o in aws_out.items()} == {"ap-northeast-1": 13, "ca-central-1": 7}

    # Spot through boto3: every Linux/UNIX row of the configured families, over three NextToken pages.
    expected_spot = [r for r in replay.spot_rows() if r["ProductDescription"] == "Linux/UNIX"
                     and r["InstanceType"].split(".")[0] in load_fetch_config().aws_spot.instance_families]
    assert len(providers.spot_start_times) == -(-len(expected_spot) // replay.SPOT_PAGE_ROWS) == 3
    spot_out = next(o for o in report.outcomes if o.format == "aws-spot")
    assert spot_out.rows_read == len(expected_spot)

    # Every download recorded with status, size, hash and validators; sizes match the files on disk.
    recorded = rows("select provider, http_status, outcome, size_bytes, content_sha256, path, etag "
                    "from raw.downloads where outcome = 'downloaded'")
    assert len(recorded) == 3 + 2 + 3 + 1 + 3  # azure pages, gcp pages, aws index + 2 offers, spot, 3 catalogs
    for _provider, status, _outcome, size, sha, path, _etag in recorded:
        assert status == 200 and len(sha) == 64 and Path(path).stat().st_size == size
    assert all(etag for p, *_rest, etag in recorded if p in ("aws", "skypilot"))

    # Second fetch: the AWS index and both offers answer 304 to If-None-Match; 0 bytes for AWS.
    before = rows("select count(*) from raw.ingested_files")[0][0]
    again = fetch_once(load_fetch_config(), ALL, configured.resources(), configured.price_ingest())
    aws_again = by_name(again, "aws")
    assert (aws_again.status, aws_again.bytes, aws_again.pages) == ("unchanged", 0, 3)
    conditional = providers.requests_to("/offers/")[-3:]
    assert all(h.get("If-None-Match") for _, _, h in conditional)
    assert rows("select count(*), sum(size_bytes) from raw.downloads where provider = 'aws' and http_status = 304"
                ) == [(3, 0)]
    # Spot asks only for prices since the newest one it has (2022-05-31T23:59:47Z in the recorded file).
    newest = max(r["Timestamp"] for r in expected_spot)
    assert providers.spot_start_times[-1].startswith(newest[:19])
    assert by_name(again, "aws-spot").status == "unchanged"
    assert by_name(again, "skypilot").status == "unchanged"
    assert rows("select count(*) from raw.ingested_files")[0][0] == before  # nothing new to ingest


def test_same_content_over_http_gives_the_same_prices(
    providers: replay.Replay, gpucost_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tasks.fetch.context import FetchedFile
    from tasks.fetch.handoff import ingest_fetched

    # Every observation (not only the current price: two sources of one offer observed at the same moment
    # are told apart by file and line, which differ between one file and its pages).
    shape = ("select provider, region, coalesce(zone, ''), instance_type, pricing, gpu, usd_per_hour, "
             "usd_per_gpu_hour from core.price_observations order by all")
    rejected = "select failed_check, raw_values::varchar from quarantine.rejected_rows order by all"
    report = fetch_once(load_fetch_config(), ["skypilot"], configured.resources(),
                        configured.price_ingest())  # (Azure's pages: figures checked in the test above)
    assert [r.status for r in report.results] == ["ok"]
    over_http, rejected_over_http = rows(shape), rows(rejected)
    p5 = rows("select distinct usd_per_hour, usd_per_gpu_hour from core.prices_current where provider = 'aws' "
              "and instance_type = 'p5.48xlarge' and region = 'us-east-1' and pricing = 'on_demand'")
    assert p5 == [(55.04, pytest.approx(6.88))]  # 55.04 USD per instance-hour / 8 H100

    # The same bundled files read from disk into a fresh warehouse, through the same adapters.
    monkeypatch.setenv("GPUCOST_HOME", str(tmp_path / "from-files"))
    files = [FetchedFile(replay.PRICE_SAMPLES / name, cloud, "skypilot")
             for (_v, cloud), name in replay.SKYPILOT_FILES.items()]
    with warehouse(configured.resources().warehouse) as con:
        ingest_fetched(con, files, datetime.now(UTC), configured.price_ingest())
    assert rows(shape) == over_http
    assert rows(rejected) == rejected_over_http
    assert len(over_http) > 1500  # the three catalogs hold 494 + 374 + 187 offers, most priced on-demand and spot


def test_429_with_retry_after_then_success(providers: replay.Replay, httpserver: HTTPServer) -> None:
    path = f"{replay.SKYPILOT_BASE}/v8/lambda/vms.csv"
    httpserver.expect_oneshot_request(path).respond_with_data("slow down", status=429, headers={"Retry-After": "1"})
    started = time.perf_counter()
    report = fetch_once(load_fetch_config(), ["skypilot"], configured.resources(), configured.price_ingest())
    assert time.perf_counter() - started >= 1.0  # waited the server's Retry-After, not the 0.05 s backoff
    assert by_name(report, "skypilot").status == "ok"
    assert len(providers.requests_to("/lambda/vms.csv$")) == 1  # the 429 is not logged by the replay handler
    assert rows("select http_status from raw.downloads where url like '%lambda/vms.csv'") == [(200,)]


def test_a_500_for_one_provider_keeps_its_last_prices_while_the_others_succeed(
    providers: replay.Replay, httpserver: HTTPServer
) -> None:
    earlier = datetime.now(UTC) - timedelta(days=3)
    first = fetch_once(load_fetch_config(), ["gcp"], configured.resources(), configured.price_ingest(), now=earlier)
    assert by_name(first, "gcp").status == "ok"
    gcp_prices = rows("select count(*) from core.prices_current where provider = 'gcp'")[0][0]
    assert gcp_prices > 0

    for _ in range(3):  # every attempt of [http] attempts = 3
        httpserver.expect_oneshot_request(replay.GCP_PATH).respond_with_data("backend error", status=500)
    report = fetch_once(load_fetch_config(), ["gcp", "skypilot"], configured.resources(), configured.price_ingest())
    gcp, skypilot = by_name(report, "gcp"), by_name(report, "skypilot")
    assert gcp.status == "failed" and "HTTP 500" in gcp.detail
    assert skypilot.status == "ok" and len(skypilot.files) == 3
    assert rows("select count(*) from core.prices_current where provider = 'gcp'")[0][0] == gcp_prices
    status = {row["provider"]: row for row in report.status}
    assert status["gcp"]["status"] == "failed" and "HTTP 500" in status["gcp"]["detail"]
    assert status["gcp"]["price_age_days"] == pytest.approx(3.0, abs=0.01)  # the last good fetch, 3 days ago
    assert status["skypilot"]["price_age_days"] == pytest.approx(0.0, abs=0.01)


def test_a_connection_cut_half_way_leaves_no_file_and_no_registered_download(
    providers: replay.Replay, httpserver: HTTPServer, gpucost_home: Path
) -> None:
    path = f"{replay.SKYPILOT_BASE}/v8/lambda/vms.csv"
    body = (replay.PRICE_SAMPLES / "skypilot_v8_lambda_gpu.csv").read_bytes()

    def cut(_request: object) -> Response:
        # Announces the whole file, sends half, then the generator ends and the server closes the connection.
        return Response(iter([body[: len(body) // 2]]), headers={"Content-Length": str(len(body))},
                        content_type="text/csv", direct_passthrough=True)

    for _ in range(3):
        httpserver.expect_oneshot_request(path).respond_with_handler(cut)
    report = fetch_once(load_fetch_config(), ["skypilot"], configured.resources(), configured.price_ingest())
    skypilot = by_name(report, "skypilot")
    assert skypilot.status == "partial" and "lambda" in skypilot.detail and "cut" in skypilot.detail
    downloads = gpucost_home / "downloads"
    assert not list(downloads.rglob("lambda-*")) and not list(downloads.rglob(".*part*"))
    assert rows("select count(*) from raw.downloads where url like '%lambda%'") == [(0,)]
    assert {o.provider for o in report.outcomes} == {"aws", "azure"}  # the two complete catalogs were ingested


def test_an_html_error_page_with_status_200_is_quarantined_as_the_wrong_format(
    providers: replay.Replay, httpserver: HTTPServer, gpucost_home: Path
) -> None:
    page = "<!DOCTYPE html><html><head><title>Service Unavailable</title></head><body>Try later</body></html>"
    httpserver.expect_oneshot_request(
        replay.AZURE_PATH, query_string={"$filter": replay.AZURE_FILTER, "$skip": "250"}
    ).respond_with_data(page, status=200, content_type="text/html")
    report = fetch_once(load_fetch_config(), ["azure"], configured.resources(), configured.price_ingest())
    azure = by_name(report, "azure")
    assert azure.status == "partial" and "HTML page" in azure.detail
    # Page 1 arrived whole and was ingested; the HTML body kept aside and quarantined as a file.
    assert [o.status for o in report.outcomes] == ["loaded"]
    quarantined = rows("select source_file, error from quarantine.rejected_files")
    assert len(quarantined) == 1 and "/quarantined/" in quarantined[0][0] and "HTML page" in quarantined[0][1]
    assert Path(quarantined[0][0]).read_text() == page
    assert rows("select outcome, http_status from raw.downloads where provider = 'azure' order by downloaded_at"
                ) == [("downloaded", 200), ("quarantined", 200)]


def test_retry_after_and_backoff_policy() -> None:
    from tasks.fetch.http import HttpPolicy, RetryableStatus, retry_after_seconds, wait_seconds

    policy = HttpPolicy(backoff_seconds=2, max_backoff_seconds=10, max_retry_after_seconds=60)
    assert [wait_seconds(policy, n, None) for n in (1, 2, 3, 4)] == [2, 4, 8, 10]  # 2 x 2^(n-1), capped at 10
    assert wait_seconds(policy, 1, RetryableStatus("u", 429, 30.0)) == 30.0
    assert wait_seconds(policy, 1, RetryableStatus("u", 429, 600.0)) == 60.0  # capped
    assert wait_seconds(policy, 2, RetryableStatus("u", 500, None)) == 4  # no Retry-After: backoff
    now = datetime(2026, 12, 1, 2, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds("Tue, 01 Dec 2026 02:00:45 GMT", now) == 45.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_pruning_keeps_recent_days_and_the_warehouse_records(providers: replay.Replay, gpucost_home: Path) -> None:
    from tasks.fetch.prune import prune_downloads

    old_run = datetime.now(UTC) - timedelta(days=20)
    fetch_once(load_fetch_config(), ["skypilot"], configured.resources(), configured.price_ingest(), now=old_run)
    root = gpucost_home / "downloads"
    old_day = root / "skypilot" / f"{old_run:%Y-%m-%d}"
    assert old_day.is_dir()
    (root / "skypilot" / "notes").mkdir()  # not a dated folder: left alone
    recent = root / "azure" / f"{datetime.now(UTC) - timedelta(days=13):%Y-%m-%d}"
    recent.mkdir(parents=True)
    assert prune_downloads(root, 14, datetime.now(UTC).date()) == [old_day]
    assert recent.is_dir() and (root / "skypilot" / "notes").is_dir() and not old_day.exists()
    # What was ingested from the pruned files stays: registry rows and prices.
    assert rows("select count(*) from raw.ingested_files where source_file like ?", [f"{old_day}%"]) == [(3,)]
    assert rows("select count(*) from core.price_observations where source_file like ?", [f"{old_day}%"])[0][0] > 0


def test_base_urls_come_from_config_unless_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUCOST_FETCH_AZURE_URL", raising=False)
    config = load_fetch_config()
    assert config.base_url("azure") == "https://prices.azure.com/api/retail/prices"
    monkeypatch.setenv("GPUCOST_FETCH_AZURE_URL", "http://127.0.0.1:9/prices")
    monkeypatch.setenv("GPUCOST_FETCH_AWS_SPOT_URL", "http://127.0.0.1:9")
    assert config.base_url("azure") == "http://127.0.0.1:9/prices"
    assert config.base_url("aws-spot") == "http://127.0.0.1:9"
    assert config.enabled is False  # the shipped config is offline: `make run` reads the bundled files only


def test_providers_without_credentials_are_skipped_with_one_line(
    providers: replay.Replay, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GPUCOST_GCP_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    report = fetch_once(load_fetch_config(), ["gcp", "aws-spot"], configured.resources(), configured.price_ingest())
    assert {r.name: r.status for r in report.results} == {"gcp": "skipped", "aws-spot": "skipped"}
    assert "GPUCOST_GCP_API_KEY" in by_name(report, "gcp").detail
    assert "no AWS credentials" in by_name(report, "aws-spot").detail
    assert not providers.requests
