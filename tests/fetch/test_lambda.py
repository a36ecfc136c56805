"""Lambda Cloud's instance-types API, fetched from the local replay server and read by the `lambda-api`
adapter: the same prices as SkyPilot's Lambda catalog (the file the response is re-enveloped from)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tasks.fetch.config import load_fetch_config
from tasks.fetch.run import fetch_once
from tasks.warehouse import warehouse
from tests import configured
from tests.fetch import replay

OFFERS = ("select provider, region, instance_type, pricing, gpu, gpu_count, gpu_memory_gb, usd_per_hour, "
          "usd_per_gpu_hour from core.prices_current where provider = 'lambda' order by all")


def rows(sql: str, params: list | None = None) -> list[tuple]:
    with warehouse(configured.resources().warehouse) as con:
        return con.execute(sql, params or []).fetchall()


def test_lambda_api_gives_the_catalogs_prices_and_skips_a_type_with_no_capacity(
    providers: replay.Replay, gpucost_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tasks.fetch.context import FetchedFile
    from tasks.fetch.handoff import ingest_fetched

    report = fetch_once(load_fetch_config(), ["lambda"], configured.resources(), configured.price_ingest())
    (result,) = report.results
    assert (result.status, len(result.files)) == ("ok", 1)
    (_path, _args, headers), = providers.requests_to(replay.LAMBDA_PATH)
    assert headers["Authorization"] == f"Bearer {replay.LAMBDA_KEY}"  # the key as a bearer token ...
    assert not rows("select url from raw.downloads where url like ?", [f"%{replay.LAMBDA_KEY}%"])  # ... never recorded
    (outcome,) = report.outcomes
    # 22 types x 17 regions = 374 catalog rows; gpu_8x_v100 is served with no region with capacity, so
    # 21 x 17 = 357 priced offers and one type skipped for that reason.
    assert (outcome.rows_read, outcome.rows_skipped) == (357, 1)
    over_api = rows(OFFERS)
    assert len(over_api) == 357
    # gpu_8x_h100_sxm5: 8 H100 SXM, 31.92 USD per instance-hour in the catalog -> 3192 cents -> 3.99 per GPU-hour
    h100 = {(r[7], round(r[8], 6)) for r in over_api if r[2] == "gpu_8x_h100_sxm5"}
    assert h100 == {(31.92, 3.99)}
    assert {r[4] for r in over_api if r[2] == "gpu_1x_a100"} == {"A100-PCIe-40GB"}  # the override table applies

    # The catalog file itself through the SkyPilot adapter, in a fresh warehouse: every offer identical.
    monkeypatch.setenv("GPUCOST_HOME", str(tmp_path / "from-file"))
    with warehouse(configured.resources().warehouse) as con:
        ingest_fetched(con, [FetchedFile(replay.PRICE_SAMPLES / "skypilot_v8_lambda_gpu.csv", "lambda", "skypilot")],
                       datetime.now(UTC), configured.price_ingest())
    from_file = [r for r in rows(OFFERS) if r[2] != replay.LAMBDA_NO_CAPACITY]
    assert over_api == from_file


def test_a_type_with_no_capacity_is_priced_in_the_configured_regions(
    providers: replay.Replay, gpucost_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = load_fetch_config()  # cached and frozen: the test's change is a copy
    config = loaded.model_copy(update={"lambda_": loaded.lambda_.model_copy(update={"regions": ["us-east-1",
                                                                                          "us-west-1"]})})
    report = fetch_once(config, ["lambda"], configured.resources(), configured.price_ingest())
    assert (report.outcomes[0].rows_read, report.outcomes[0].rows_skipped) == (357 + 2, 0)
    assert rows("select region, usd_per_hour from core.prices_current where instance_type = ? order by region",
                [replay.LAMBDA_NO_CAPACITY]) == [("us-east-1", 6.32), ("us-west-1", 6.32)]


def test_without_a_key_lambda_is_skipped_with_one_line(providers: replay.Replay,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUCOST_LAMBDA_API_KEY")
    (result,) = fetch_once(load_fetch_config(), ["lambda"], configured.resources(), configured.price_ingest()).results
    assert result.status == "skipped" and "GPUCOST_LAMBDA_API_KEY" in result.detail
    assert not providers.requests
