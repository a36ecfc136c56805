"""6. Fetch + ingest of a large AWS offer file: a generated EC2 offer CSV (default ~1 GB, `BENCH_FETCH_MB`)
served by a local HTTP server (127.0.0.1, in the measured process), fetched by `gpucost fetch`'s code
(region index -> offer file, streamed to disk) and ingested through the aws-offer adapter. Peak memory is
the whole process's (server thread included). Floor: DuckDB `read_csv` of the same file into a table."""

from __future__ import annotations

import json
import os
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.common import BenchConfig, Configured, Row, env_int, fresh_home, run_step, timed, warm_validation
from tasks.settings import PROJECT_ROOT

SECTION = "6. fetch + ingest (AWS offer CSV over HTTP)"
SAMPLE = PROJECT_ROOT / "data" / "samples" / "prices" / "aws_pricelist_ec2_offer_index_sample_v20250912225308.csv"
REGION = "us-east-1"
VERSION = "20250912225308"


def write_offer_file(path: Path, megabytes: int) -> int:
    """The bundled offer CSV's preamble and header, then its 44 real rows repeated (SKU prefixed per copy)
    until the file reaches `megabytes` MB. Returns the data rows written."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(True)
    head, body = lines[:6], lines[6:]
    path.parent.mkdir(parents=True, exist_ok=True)
    target = megabytes * 1_000_000
    written = rows = 0
    with open(path, "w", encoding="utf-8") as out:
        for line in head:
            written += out.write(line)
        copy = 0
        while written < target:
            for line in body:
                # first field is the quoted SKU: prefixed with the copy number, every row is a distinct record
                written += out.write(f'"{copy:08d}{line[1:]}')
                rows += 1
            copy += 1
    return rows


def _serve(root: Path) -> tuple[ThreadingHTTPServer, str]:
    handler = partial(SimpleHTTPRequestHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def fetch_and_ingest(offer: str, home: str, config_dir: str) -> dict[str, Any]:
    """Measured step: `fetch_once(["aws"])` against a local server holding the region index and the offer."""
    fresh_home(Path(home))
    root = Path(home) / "served"
    offer_dir = root / "offers" / "v1.0" / "aws" / "AmazonEC2" / VERSION / REGION
    offer_dir.mkdir(parents=True)
    os.link(offer, offer_dir / "index.csv")  # served from disk, not copied into memory
    index = {"formatVersion": "v1.0", "regions": {REGION: {
        "regionCode": REGION, "currentVersionUrl": f"/offers/v1.0/aws/AmazonEC2/{VERSION}/{REGION}/index.json"}}}
    (root / "region_index.json").write_text(json.dumps(index), encoding="utf-8")
    server, base = _serve(root)
    os.environ["GPUCOST_FETCH_AWS_URL"] = f"{base}/region_index.json"
    os.environ["GPUCOST_CONFIG_DIR"] = config_dir
    os.environ["CI"] = "true"  # no progress bars in the benchmark log
    gx_import_s = warm_validation()
    from tasks.fetch.config import load_fetch_config
    from tasks.fetch.run import fetch_once

    loaded = Configured()
    try:
        with timed() as t:
            report = fetch_once(load_fetch_config(), ["aws"], loaded.resources, loaded.price_ingest())
    finally:
        server.shutdown()
    aws = report.results[0]
    if aws.status != "ok":
        raise RuntimeError(f"fetch aws {aws.status}: {aws.detail}")
    outcome = report.outcomes[0]
    return {"seconds": t["s"], "bytes": aws.bytes, "download_s": sum(d.seconds for d in aws.downloads),
            "rows_read": outcome.rows_read, "rows_skipped": outcome.rows_skipped, "status": outcome.status,
            "error": outcome.error, "gx_import_s": gx_import_s}


def download_only(offer: str, home: str) -> dict[str, Any]:
    """Measured step: the same offer file through the fetcher's streamed download alone (no ingest)."""
    fresh_home(Path(home))
    root = Path(home) / "served"
    root.mkdir()
    os.link(offer, root / "index.csv")
    server, base = _serve(root)
    from tasks.fetch.http import HttpPolicy, download, make_client

    policy = HttpPolicy()
    try:
        with make_client(policy) as client, timed() as t:
            got = download(client, f"{base}/index.csv", Path(home) / "downloaded" / "index.csv", policy, expect="csv")
    finally:
        server.shutdown()
    return {"seconds": t["s"], "bytes": got.size_bytes}


def _config_dir(work: Path) -> Path:
    import shutil

    target = work / "config"
    shutil.copytree(PROJECT_ROOT / "config", target, dirs_exist_ok=True)
    text = (target / "fetch.toml").read_text(encoding="utf-8")
    text = text.replace('regions = ["us-east-1", "us-east-2", "us-west-2", "eu-west-1"]', f'regions = ["{REGION}"]')
    (target / "fetch.toml").write_text(text, encoding="utf-8")
    return target


def run(cfg: BenchConfig) -> list[Row]:
    megabytes = env_int("BENCH_FETCH_MB", 1024)
    work = cfg.work_dir / "fetch"
    offer = work / f"aws_offer_{megabytes}mb.csv"
    if not offer.exists():
        write_offer_file(offer, megabytes)
    result = run_step("fetch:fetch_and_ingest", offer=str(offer), home=str(work / "home"),
                      config_dir=str(_config_dir(work)))
    floor = run_step("floors:load_offer_csv", path=str(offer), database=str(work / "floor.duckdb"))
    alone = run_step("fetch:download_only", offer=str(offer), home=str(work / "home-download"))
    size_mb = offer.stat().st_size / 1e6
    note = (f"{size_mb:.0f} MB offer, {result['bytes'] / 1e6:.0f} MB downloaded in {result['download_s']:.1f} s; "
            f"{result['rows_read'] + result['rows_skipped']} records ({result['status']}"
            f"{': ' + str(result['error'])[:80] if result.get('error') else ''}); "
            f"peak {result['peak_mb']:.0f} MB (target < 1536 MB for 1 GB)")
    return [
        Row(SECTION, "fetch_once(aws) vs read_csv", floor["rows"], result["seconds"], floor["seconds"],
            result["peak_mb"], floor["peak_mb"], note),
        Row(SECTION, "download alone (streamed to disk) vs read_csv", floor["rows"], alone["seconds"],
            floor["seconds"], alone["peak_mb"], floor["peak_mb"],
            f"{size_mb:.0f} MB offer; {alone['bytes'] / 1e6:.0f} MB written; the fetch side's own memory"),
    ]
