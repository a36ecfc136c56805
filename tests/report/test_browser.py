"""The offers page (`gpucost report`, tasks/report/) in a real browser: Debian's headless chromium driven by
Playwright, on the page the session's bundled night wrote (tests/cli/night.py), opened from the file with every
network request refused."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.cli.night import Night, gpucost

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs"
HOSTILE_TYPES = ("<img src=x onerror=alert(1)>", '" onmouseover=alert(2) x="', "</script><script>alert(3)</script>")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed (.ci/run installs it)")]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def open_page(browser: Any, path: Path, width: int = 1280) -> tuple[Any, list[str], float]:
    """The page at `path` in a new tab `width` px wide, every request but the file itself refused; what the
    console and the page reported as errors, and the seconds until `load`."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"a dialog opened: {d.message}"), d.dismiss()))
    page.route(re.compile(r"^(?!file:).*"), lambda route: (problems.append(f"request: {route.request.url}"),
                                                            route.abort()))
    started = time.perf_counter()
    page.goto(path.as_uri(), wait_until="load")
    return page, problems, time.perf_counter() - started


def visible_rows(table: Any) -> list[dict[str, str]]:
    return table.evaluate("""t => Array.from(t.tBodies[0].rows).filter(r => !r.hidden && r.dataset.gpu).map(r => ({
        rank: r.cells[0].textContent, where: r.querySelector('.where').textContent,
        what: r.querySelector('.what').textContent, pricing: r.cells[2].textContent, gpu: r.dataset.gpu,
        mtok: r.cells[6].textContent, interval: r.cells[7].textContent, hours: r.cells[4].textContent}))""")


def test_the_nights_page_opens_offline_filters_like_gpucost_offers_and_reads_the_published_figures(
        night: Night, browser: Any) -> None:
    assert night.returncode == 0, night.stderr[-3000:]
    path = night.home / "report" / "index.html"
    html = path.read_text(encoding="utf-8")
    assert path.stat().st_size <= 3_000_000
    # nothing fetched: no script, style, font or image from an address, no external file at all
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert not re.search(r"url\(|@import|@font-face", html, re.IGNORECASE)
    assert "http://" not in html and "https://" not in html

    page, problems, seconds = open_page(browser, path)
    assert problems == []
    assert seconds < 30
    page.screenshot(path=str(night.home / "report-1280.png"))

    # one workload, one GPU, spot: the rows and their order of `gpucost offers --json` for the same filter
    workload, gpu = "7b-pretrain-1t", "H100-SXM"
    page.select_option("select[name=workload]", workload)
    page.select_option("select[name=gpu]", gpu)
    page.select_option("select[name=pricing]", "spot")
    section = page.locator(f"section.workload[data-workload='{workload}']")
    assert page.locator("section.workload:visible").count() == 1
    shown = visible_rows(section.locator("table[data-sort=cost]"))
    assert 3 <= len(shown) <= 25
    done = gpucost("offers", "--workload", workload, "--gpu", gpu, "--spot", "--json", "--limit", "200",
                   env=night.env)
    assert done.returncode == 0, done.stderr
    offers = json.loads(done.stdout)
    assert {o["gpu"] for o in offers} == {gpu}
    # the page folds zones at one price into one row: the offers, folded the same way, in their order
    folded: list[dict[str, Any]] = []
    for offer in offers:
        key = {k: v for k, v in offer.items() if k not in ("zone", "position_in_workload")}
        if folded and folded[-1]["key"] == key:
            folded[-1]["zones"].append(offer["zone"])
        else:
            folded.append({"key": key, "zones": [offer["zone"]], "offer": offer})
    for row, expected in zip(shown, folded, strict=False):
        offer = expected["offer"]
        assert int(row["rank"]) == offer["rank_by_cost"]
        assert row["where"].startswith(f"{offer['provider']} {offer['region']}")
        for zone in expected["zones"]:
            assert zone is None or zone in row["where"]
        assert row["what"].endswith(offer["instance_type"])
        assert row["pricing"] == "spot"
    assert len(shown) == min(len(folded), 25)

    # the top offer's $/Mtoken, interval and hours against the published table (3 significant figures)
    page.select_option("select[name=gpu]", "")
    page.select_option("select[name=pricing]", "")
    top = visible_rows(section.locator("table[data-sort=cost]"))[0]
    with duckdb.connect(str(night.home / "published.duckdb"), read_only=True) as con:
        published = con.execute(
            "select usd_per_mtoken, usd_per_mtoken_low, usd_per_mtoken_high, expected_hours from gpu_cost_ranking "
            "where workload = ? and cluster_choice = 'cheapest' and rank_by_cost = 1", [workload]).fetchall()
    assert published
    mtok, low, high, hours = published[0]
    assert float(top["mtok"]) == pytest.approx(mtok, rel=5e-3)
    shown_low, shown_high = (float(v) for v in top["interval"].split("-"))
    assert shown_low == pytest.approx(low, rel=5e-3) and shown_high == pytest.approx(high, rel=5e-3)
    assert low < mtok < high
    assert float(top["hours"].replace(",", "")) == pytest.approx(hours, rel=5e-3)

    # a pointer on the chart's cheapest point names an offer
    plot = section.locator(".plot .u-over")
    box = plot.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 2, box["y"] + 2)
    page.mouse.move(box["x"] + box["width"] / 3, box["y"] + box["height"] / 2)
    assert problems == []
    page.close()

    # readable at a phone's width: no horizontal scroll of the page itself (wide tables scroll in their box)
    phone, problems, _ = open_page(browser, path, width=390)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.screenshot(path=str(night.home / "report-390.png"))
    assert problems == []
    phone.close()

    # scripts off: every offers table reads whole, server-rendered; the filters (which need a script) are not shown
    context = browser.new_context(java_script_enabled=False)
    bare = context.new_page()
    bare.goto(path.as_uri())
    assert bare.locator("table.offers tbody tr:visible").count() == html.count("<tr data-gpu=")
    assert not bare.locator("#filters").is_visible()
    context.close()


def test_hostile_instance_types_in_a_price_list_render_as_text_and_run_nothing(
        night: Night, browser: Any, tmp_path: Path) -> None:
    """A price list whose instance types are markup, ingested and published on a copy of the night: the page
    shows them as text, and no dialog opens (a dialog fails the test)."""
    home = night.copy_home(tmp_path / "home")
    env = {**night.env, "GPUCOST_HOME": str(home)}
    gpu_info = "\"{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 8.0, 'MemoryInfo': " \
               "{'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 655360}\""
    lines = ["InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice"]
    for i, name in enumerate(HOSTILE_TYPES):
        quoted = '"' + name.replace('"', '""') + '"'
        # 2.00 USD per H100-hour and up: above the class floor and above 0.1 x the H100 on-demand median (1.15), so
        # not quarantined, and cheap enough to rank among the page's rows
        lines.append(f"{quoted},H100,8.0,208.0,1800.0,{16.0 + i / 10:.1f},us-east-{i + 1},{gpu_info},")
    hostile = tmp_path / "hostile_lambda.csv"
    hostile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for args in (("ingest", "prices", "--provider", "lambda", "--format", "skypilot", str(hostile)), ("publish",)):
        done = gpucost(*args, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
    path = home / "report" / "index.html"
    html = path.read_text(encoding="utf-8")
    for name in HOSTILE_TYPES:
        assert name not in html  # only ever escaped
    page, problems, _ = open_page(browser, path)
    page.select_option("select[name=provider]", "lambda")
    text = page.locator("main").inner_text()
    for name in HOSTILE_TYPES:
        assert name in text, name  # shown as the text it is
    page.screenshot(path=str(home / "report-hostile.png"))
    assert page.locator("main img").count() == 0
    # the chart's pointer names them as text too
    for plot in page.locator(".plot .u-over").all()[:2]:
        box = plot.bounding_box()
        if box:
            page.mouse.move(box["x"] + 3, box["y"] + box["height"] - 3)
    assert problems == []
    page.close()
