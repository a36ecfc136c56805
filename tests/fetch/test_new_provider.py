"""Adding a cloud is one module and one line in the list: tests/fetch/tinycloud.py, registered here the way
tasks/providers/registry.py lists the shipped ones, is fetched over HTTP from the local replay server and its
prices ingested, with no other change (no settings field, no fetcher or format table, no config file edit)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from tasks.config import load
from tasks.fetch.config import fetch_config_model, load_fetch_config
from tasks.fetch.run import fetch_once
from tasks.providers import registry
from tasks.settings import ConfigError
from tasks.sources import Sources, price_sources_for
from tasks.warehouse import warehouse
from tests import configured
from tests.conftest import PRICE_SAMPLES
from tests.fetch import tinycloud

# Real rows of the bundled SkyPilot Lambda catalog, served in tinycloud's envelope.
MACHINES = ("gpu_1x_h100_sxm5", "gpu_8x_h100_sxm5", "gpu_8x_b200_sxm6")
REGION = "us-east-1"


def machines() -> dict[str, list[dict[str, object]]]:
    with open(PRICE_SAMPLES / "skypilot_v8_lambda_gpu.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["InstanceType"] in MACHINES and r["Region"] == REGION]
    return {"machines": [{"id": r["InstanceType"], "accelerator": r["AcceleratorName"],
                          "accelerators": float(r["AcceleratorCount"]), "region": r["Region"],
                          "usd_per_hour": float(r["Price"])} for r in rows]}


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one edit a new cloud needs: its module in the list."""
    monkeypatch.setattr(registry, "PROVIDERS", [*registry.PROVIDERS, tinycloud.PROVIDER])


def test_a_provider_added_in_one_module_is_fetched_and_ingested(
    registered: None, httpserver: HTTPServer, gpucost_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    httpserver.expect_request("/v2/machines", method="GET").respond_with_json(machines())
    monkeypatch.setenv("GPUCOST_FETCH_TINYCLOUD_URL", httpserver.url_for("/v2/machines"))
    config = load_fetch_config()  # the shipped fetch.toml: no [tinycloud] section, its defaults apply
    assert config.base_url("tinycloud") == httpserver.url_for("/v2/machines")
    report = fetch_once(config, ["tinycloud"], configured.resources(), configured.price_ingest())
    (result,) = report.results
    assert (result.status, len(result.files)) == ("ok", 1)
    (outcome,) = report.outcomes
    assert (outcome.status, outcome.rows_read, outcome.rows_loaded) == ("loaded", 3, 3)
    with warehouse(read_only=True) as con:
        got = con.execute("select instance_type, gpu, gpu_count, usd_per_hour, usd_per_gpu_hour "
                          "from core.price_observations where provider = 'tinycloud' order by instance_type").fetchall()
    # the catalog's prices per instance-hour, per GPU-hour = price / GPUs:
    # 4.29 / 1 = 4.29; 31.92 / 8 = 3.99; 53.52 / 8 = 6.69; "H100" is H100-SXM in data/reference/gpu_aliases.csv
    assert [(i, g, n, p, round(q, 4)) for i, g, n, p, q in got] == [
        ("gpu_1x_h100_sxm5", "H100-SXM", 1, 4.29, 4.29),
        ("gpu_8x_b200_sxm6", "B200", 8, 53.52, 6.69),
        ("gpu_8x_h100_sxm5", "H100-SXM", 8, 31.92, 3.99),
    ]


def test_its_format_and_config_section_are_known_once_registered(
    registered: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (source,) = price_sources_for([tmp_path / "machines.json"], "tinycloud", "tinycloud-json", Sources())
    assert source.format == "tinycloud-json"
    # its section of config/fetch.toml is validated by its own model: a typo is named like any other
    folder = tmp_path / "config"
    folder.mkdir()
    fetch_toml = (Path(__file__).parents[2] / "config" / "fetch.toml").read_text()
    (folder / "fetch.toml").write_text(fetch_toml + '\n[tinycloud]\nregoins = ["us-east-1"]\n')
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(folder))
    with pytest.raises(ConfigError) as refused:
        load("fetch", fetch_config_model())
    assert str(refused.value).endswith("tinycloud.regoins: unknown key (did you mean regions?)")
