"""Recorded, real-format price API responses replayed by a local HTTP server (pytest-httpserver on 127.0.0.1).

Every body is built from the real price files bundled in data/samples/prices (see
tests/fixtures/fetch/SOURCES.md for how each response is sliced or re-enveloped); nothing is invented.
`Replay` keeps the handlers' state (requests seen, validators) so tests can assert on them.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.conftest import FIXTURES, PRICE_SAMPLES

AZURE_PATH = "/api/retail/prices"
AZURE_FILTER = "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and contains(armSkuName, 'Standard_N')"
AZURE_PAGE_ITEMS = 250  # the real API pages at 1,000; 598 items in 250s give 3 pages (250, 250, 98)
GCP_PATH = "/v1/services/6F81-5844-456A/skus"
GCP_KEY = "test-key-not-a-secret"
AWS_INDEX_PATH = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
AWS_VERSION = "20250912225308"  # the bundled offer CSV's Version line
AWS_REGIONS = ("ap-northeast-1", "ca-central-1")
SKYPILOT_BASE = "/catalogs"
SKYPILOT_FILES = {
    ("v8", "aws"): "skypilot_v8_aws_gpu_subset.csv",
    ("v8", "lambda"): "skypilot_v8_lambda_gpu.csv",
    ("v6", "azure"): "skypilot_v6_azure_gpu.csv",
}
LAMBDA_PATH = "/api/v1/instance-types"
LAMBDA_KEY = "test-lambda-key-not-a-secret"
LAMBDA_NO_CAPACITY = "gpu_8x_v100"  # listed with no region with capacity (the fault the adapter must handle)
SPOT_PAGE_ROWS = 200  # 510 Linux/UNIX rows -> 3 pages linked by NextToken
LAST_MODIFIED = "Fri, 12 Sep 2025 22:53:08 GMT"
FETCH_FIXTURES = FIXTURES / "fetch"


def azure_items() -> list[dict[str, Any]]:
    return json.loads((PRICE_SAMPLES / "azure_retail_prices_gpu_westus.json").read_text())["Items"]


def aws_region_offer(region: str) -> bytes:
    """The bundled EC2 offer CSV cut to one region: its 5-line preamble, header, and that region's rows."""
    lines = (PRICE_SAMPLES / "aws_pricelist_ec2_offer_index_sample_v20250912225308.csv").read_text().splitlines(True)
    header = next(csv.reader([lines[5]]))
    column = header.index("Region Code")
    rows = [line for line in lines[6:] if next(csv.reader([line]))[column] == region]
    return "".join(lines[:6] + rows).encode()


def aws_region_index(base: str) -> dict[str, Any]:
    """The Price List region index (as the real region_index.json): currentVersionUrl per region."""
    return {
        "formatVersion": "v1.0",
        "disclaimer": "This pricing list is for informational purposes only.",
        "publicationDate": "2025-09-12T22:53:08Z",
        "regions": {
            region: {
                "regionCode": region,
                "currentVersionUrl": f"/offers/v1.0/aws/AmazonEC2/{AWS_VERSION}/{region}/index.json",
            }
            for region in AWS_REGIONS
        },
    }


def gcp_pages() -> list[dict[str, Any]]:
    """Page 1 = the recorded API page (3 SKUs and its real nextPageToken); page 2 = the 11 recorded SKUs of
    the second file in the envelope the API returns for a last page (empty nextPageToken)."""
    first = json.loads((PRICE_SAMPLES / "gcp_billing_catalog_skus_page_excerpt_opencost.json").read_text())
    second = json.loads((PRICE_SAMPLES / "gcp_billing_catalog_skus_gpu_trimmed_cromwell-monitor.json").read_text())
    return [first, {"skus": second, "nextPageToken": ""}]


def lambda_instance_types() -> dict[str, Any]:
    """The instance-types response (Lambda Cloud API's `{"data": {name: {"instance_type", "regions_with_capacity_
    available"}}}` shape) re-enveloped from the real SkyPilot Lambda catalog, which SkyPilot builds from this API:
    price_cents_per_hour = Price x 100, specs from vCPUs / MemoryGiB / AcceleratorCount, gpu_description from the
    accelerator and its per-GPU memory, one region entry per catalog row. `storage_gib` is left out (the catalog
    does not carry it and the adapter does not read it)."""
    data: dict[str, Any] = {}
    with open(PRICE_SAMPLES / "skypilot_v8_lambda_gpu.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            name = row["InstanceType"]
            mib = float(row["GpuInfo"].split("'SizeInMiB': ")[1].split("}")[0])
            item = data.setdefault(name, {
                "instance_type": {
                    "name": name,
                    "description": f"{int(float(row['AcceleratorCount']))}x {row['AcceleratorName']}",
                    "gpu_description": f"{row['AcceleratorName']} ({mib / 1024:g} GB)",
                    "price_cents_per_hour": round(float(row["Price"]) * 100),
                    "specs": {"vcpus": int(float(row["vCPUs"])), "memory_gib": int(float(row["MemoryGiB"])),
                              "gpus": int(float(row["AcceleratorCount"]))},
                },
                "regions_with_capacity_available": [],
            })
            if name != LAMBDA_NO_CAPACITY:
                item["regions_with_capacity_available"].append({"name": row["Region"], "description": row["Region"]})
    return {"data": data}


def spot_rows() -> list[dict[str, str]]:
    """The recorded describe-spot-price-history rows (headerless TSV: AZ id, type, product, price, time)."""
    text = (PRICE_SAMPLES / "aws_spot_price_history_2022-05-31_gpu_az_ids.tsv").read_text()
    keys = ("AvailabilityZone", "InstanceType", "ProductDescription", "SpotPrice", "Timestamp")
    return [dict(zip(keys, line.split("\t"), strict=True)) for line in text.splitlines() if line.strip()]


def spot_xml(rows: list[dict[str, str]], next_token: str | None) -> str:
    """EC2 Query API DescribeSpotPriceHistoryResponse (the XML boto3 parses)."""
    items = "".join(
        "<item>"
        f"<instanceType>{r['InstanceType']}</instanceType>"
        f"<productDescription>{r['ProductDescription']}</productDescription>"
        f"<spotPrice>{r['SpotPrice']}</spotPrice>"
        f"<timestamp>{r['Timestamp'].replace('+00:00', '.000Z')}</timestamp>"
        f"<availabilityZone>{r['AvailabilityZone']}</availabilityZone>"
        "</item>"
        for r in rows
    )
    token = f"<nextToken>{next_token}</nextToken>" if next_token else "<nextToken/>"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        "<requestId>59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId>"
        f"<spotPriceHistorySet>{items}</spotPriceHistorySet>{token}"
        "</DescribeSpotPriceHistoryResponse>"
    )


def etag_of(body: bytes) -> str:
    return '"' + hashlib.md5(body).hexdigest() + '"'  # an ETag, as S3/CloudFront make them


@dataclass
class Replay:
    """The replay server's state: what each endpoint was asked, and by whom."""

    server: HTTPServer
    requests: list[tuple[str, dict[str, str], dict[str, str]]] = field(default_factory=list)  # path, args, headers
    spot_start_times: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return self.server.url_for(path)

    def requests_to(self, pattern: str) -> list[tuple[str, dict[str, str], dict[str, str]]]:
        return [r for r in self.requests if re.search(pattern, r[0])]

    def _log(self, request: Request) -> None:
        self.requests.append((request.path, dict(request.args), dict(request.headers)))

    # --- handlers -------------------------------------------------------------------------------------
    def azure(self, request: Request) -> Response:
        self._log(request)
        if request.args.get("$filter") != AZURE_FILTER:
            return Response('{"Error": "bad filter"}', status=400, content_type="application/json")
        items = azure_items()
        skip = int(request.args.get("$skip", "0"))
        page = items[skip : skip + AZURE_PAGE_ITEMS]
        more = skip + AZURE_PAGE_ITEMS < len(items)
        link = (self.url(AZURE_PATH) + "?" + urlencode({"$filter": AZURE_FILTER, "$skip": skip + AZURE_PAGE_ITEMS})
                if more else None)
        body = {"BillingCurrency": "USD", "CustomerEntityId": "Default", "CustomerEntityType": "Retail",
                "Items": page, "NextPageLink": link, "Count": len(page)}
        return Response(json.dumps(body), content_type="application/json; charset=utf-8")

    def gcp(self, request: Request) -> Response:
        self._log(request)
        if request.headers.get("X-Goog-Api-Key") != GCP_KEY:
            return Response('{"error": {"code": 403, "status": "PERMISSION_DENIED"}}', status=403,
                            content_type="application/json")
        first, second = gcp_pages()
        token = request.args.get("pageToken")
        if token is None:
            return Response(json.dumps(first), content_type="application/json; charset=UTF-8")
        if token == first["nextPageToken"]:
            return Response(json.dumps(second), content_type="application/json; charset=UTF-8")
        return Response('{"error": {"code": 400, "message": "bad page token"}}', status=400,
                        content_type="application/json")

    def lambda_api(self, request: Request) -> Response:
        self._log(request)
        if request.headers.get("Authorization") != f"Bearer {LAMBDA_KEY}":
            return Response('{"error": {"code": "global/invalid-api-key", "message": "API key was invalid"}}',
                            status=401, content_type="application/json")
        return Response(json.dumps(lambda_instance_types()), content_type="application/json")

    def static(self, body: bytes, content_type: str):  # a werkzeug handler
        """A file with ETag and Last-Modified, honouring If-None-Match / If-Modified-Since with 304."""
        etag = etag_of(body)

        def handler(request: Request) -> Response:
            self._log(request)
            if request.headers.get("If-None-Match") == etag or (
                "If-None-Match" not in request.headers and request.headers.get("If-Modified-Since") == LAST_MODIFIED
            ):
                return Response(status=304, headers={"ETag": etag, "Last-Modified": LAST_MODIFIED})
            return Response(body, content_type=content_type, headers={"ETag": etag, "Last-Modified": LAST_MODIFIED})

        return handler

    def spot(self, request: Request) -> Response:
        self._log(request)
        form = request.form
        if form.get("Action") != "DescribeSpotPriceHistory":
            return Response("<Response><Errors><Error><Code>InvalidAction</Code></Error></Errors></Response>",
                            status=400, content_type="text/xml")
        start = form.get("StartTime")
        self.spot_start_times.append(start or "")
        products = {v for k, v in form.items() if k.startswith("ProductDescription.")}
        families = [v.removesuffix(".*") for k, v in form.items() if k.startswith("Filter.1.Value.")]
        since = datetime.fromisoformat(start.replace("Z", "+00:00")) if start else None
        rows = [
            r for r in spot_rows()
            if (not products or r["ProductDescription"] in products)
            and (not families or r["InstanceType"].split(".")[0] in families)
            and (since is None or datetime.fromisoformat(r["Timestamp"]) >= since)
        ]
        offset = int(form.get("NextToken") or 0)
        page = rows[offset : offset + SPOT_PAGE_ROWS]
        more = offset + SPOT_PAGE_ROWS < len(rows)
        return Response(spot_xml(page, str(offset + SPOT_PAGE_ROWS) if more else None), content_type="text/xml")


def install(server: HTTPServer) -> Replay:
    """Every provider's endpoints on one local server; returns the state to assert on."""
    replay = Replay(server)
    server.expect_request(AZURE_PATH, method="GET").respond_with_handler(replay.azure)
    server.expect_request(GCP_PATH, method="GET").respond_with_handler(replay.gcp)
    server.expect_request(LAMBDA_PATH, method="GET").respond_with_handler(replay.lambda_api)
    index = json.dumps(aws_region_index(server.url_for("/")), indent=2).encode()
    server.expect_request(AWS_INDEX_PATH).respond_with_handler(replay.static(index, "application/json"))
    for region in AWS_REGIONS:
        path = f"/offers/v1.0/aws/AmazonEC2/{AWS_VERSION}/{region}/index.csv"
        server.expect_request(path).respond_with_handler(replay.static(aws_region_offer(region), "text/csv"))
    for (version, cloud), name in SKYPILOT_FILES.items():
        body = (PRICE_SAMPLES / name).read_bytes()
        server.expect_request(f"{SKYPILOT_BASE}/{version}/{cloud}/vms.csv").respond_with_handler(
            replay.static(body, "text/plain; charset=utf-8"))
    server.expect_request("/", method="POST").respond_with_handler(replay.spot)
    return replay


def environment(server: HTTPServer) -> dict[str, str]:
    """GPUCOST_FETCH_<PROVIDER>_URL for every provider, pointing at the replay server, plus credentials."""
    return {
        "GPUCOST_FETCH_AZURE_URL": server.url_for(AZURE_PATH),
        "GPUCOST_FETCH_GCP_URL": server.url_for(GCP_PATH),
        "GPUCOST_FETCH_AWS_URL": server.url_for(AWS_INDEX_PATH),
        "GPUCOST_FETCH_SKYPILOT_URL": server.url_for(SKYPILOT_BASE),
        "GPUCOST_FETCH_AWS_SPOT_URL": server.url_for("/").rstrip("/"),
        "GPUCOST_GCP_API_KEY": GCP_KEY,
        "GPUCOST_FETCH_LAMBDA_URL": server.url_for(LAMBDA_PATH),
        "GPUCOST_LAMBDA_API_KEY": LAMBDA_KEY,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }


FETCH_TOML = """
enabled = {enabled}
providers = ["azure", "aws", "aws-spot", "gcp", "skypilot"]
keep_days = 14

[http]
connect_timeout_seconds = 5
read_timeout_seconds = 5
attempts = 3
backoff_seconds = 0.05
max_backoff_seconds = 0.2
max_retry_after_seconds = 2
max_pages = 50

[azure]
url = "https://prices.azure.com/api/retail/prices"
filter = "{azure_filter}"

[aws]
url = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/region_index.json"
regions = []
offer_format = "csv"

[aws-spot]
url = ""
regions = ["us-east-1"]
instance_families = ["g3", "g4dn", "g4ad", "g5", "g5g", "p2", "p3", "p3dn", "p4d", "p4de"]
product_descriptions = ["Linux/UNIX"]
first_lookback_hours = 100000   # the recorded history is from 2022-05-31

[gcp]
url = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"
api_key_env = "GPUCOST_GCP_API_KEY"
page_size = 5000

[lambda]
url = "https://cloud.lambda.ai/api/v1/instance-types"
api_key_env = "GPUCOST_LAMBDA_API_KEY"
regions = []

[skypilot]
url = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs"
clouds = {{ aws = "v8", lambda = "v8", azure = "v6" }}

"""



def write_config_dir(target: Path, source: Path, *, enabled: bool = False) -> Path:
    """A copy of config/ whose fetch.toml has fast retries and the replayed providers."""
    import shutil

    shutil.copytree(source, target, dirs_exist_ok=True)
    toml = FETCH_TOML.format(enabled=str(enabled).lower(), azure_filter=AZURE_FILTER)
    (target / "fetch.toml").write_text(toml, encoding="utf-8")
    return target
