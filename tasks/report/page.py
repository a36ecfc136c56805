"""Tonight's offers as one self-contained page (`$GPUCOST_HOME/report/index.html`), from the published database
only: a section per workload (its offers ranked by cost and by time, as `gpucost offers` ranks and names them,
zones at one price folded into one row; a chart of $/Mtoken against hours with the Pareto front and each offer's
interval), how the night went (price ages and fetchers, quarantine, the champion model), and the price history of
the GPUs on the fronts.

The tables are rendered here (they read with scripts off); the page's script (assets/report.js) only filters,
sorts and draws the charts with the vendored uPlot (assets/uplot/). Everything from data is escaped: text by
Jinja2's autoescaping, data for the scripts by `script_json` (no `</script>` can end the block it is in)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from tasks.display import printable
from tasks.publishing.artifacts import pareto_front
from tasks.ranking.labels import figure, network, places, usd
from tasks.ranking.offers import OfferFilter, ranked_offers
from tasks.warehouse import query

ASSETS = Path(__file__).with_name("assets")
TEMPLATES = Path(__file__).with_name("templates")
UPLOT_VERSION = "1.6.32"  # assets/uplot/SOURCE.md
# The minified file's banner names the project's address; the page holds no address at all (SOURCE.md).
UPLOT_BANNER = "/*! https://github.com/leeoniya/uPlot (v1.6.32) */"
UPLOT_NOTICE = "/*! uPlot 1.6.32, MIT license, github.com/leeoniya/uPlot */"
# Offers per table (by cost, by time) in the page: the best N of `gpucost offers --limit N`, so that a filter in
# the page shows a true prefix of what `gpucost offers` shows for it; 200 keeps the bundled night under 2 MB.
OFFERS_PER_TABLE = 200
# Cheapest-cluster offers are thinned for the chart to one per cell of this many log10 units (2-3 pixels of an
# 800-pixel chart); the Pareto front is always drawn whole.
CHART_LOG10_RESOLUTION = 1e-2
REPORT_MARKER = b"<!DOCTYPE html>\n<!-- gpucost report"


def report_path(home: Path) -> Path:
    return home / "report" / "index.html"


@dataclass
class OfferRow:
    """One row of an offers table: the offer as `gpucost offers` names it, its zones folded."""

    rank: int
    provider: str
    place: str
    region: str
    zones: list[str]
    instances: str
    instance_type: str
    pricing: str
    commitment: str
    gpu: str
    gpus: str
    machine: str
    hours: str
    total_usd: str
    usd_per_mtoken: str
    interval: str
    co2e_kg: str
    trust: str
    extrapolated: str
    # what the filters and sorts compare (full precision, as `gpucost offers` compares)
    sort_values: dict[str, str] = field(default_factory=dict)


@dataclass
class WorkloadSection:
    name: str
    facts: list[tuple[str, str]]
    ranked_offers: int
    not_ranked_offers: int
    by_cost: list[OfferRow]
    by_time: list[OfferRow]
    chart: dict[str, Any]
    front_gpus: list[str]


@dataclass
class Report:
    publish_date: date | None
    published_at: datetime | None
    model_version: str | None
    workloads: list[WorkloadSection]
    filters: dict[str, list[str]]
    price_ages: list[dict[str, Any]]
    fetch_status: list[dict[str, Any]]
    quarantine: list[dict[str, Any]]
    models: list[dict[str, Any]]
    champion_figures: list[tuple[str, str]]
    price_history: dict[str, Any]
    ranking_history: list[dict[str, Any]]
    offers_per_table: int


@dataclass
class ReportFile:
    path: Path
    size_bytes: int
    seconds: float


def script_json(value: object) -> str:
    """JSON to embed in a `<script type="application/json">`: `<`, `>`, `&` and U+2028/U+2029 as escapes, so no
    name (an instance type `</script><script>…`) can end the block or start markup."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def shown(value: object) -> str:
    """Text from data as the page shows it: control and bidirectional characters written as escapes (Jinja2
    escapes the markup)."""
    return "" if value is None else printable(str(value))


def pricing_label(pricing: str, purchase_option: str | None, offering_class: str | None) -> tuple[str, str]:
    """(`spot`, `on-demand`, `reserved 1y`, …) and the commitment's terms where there are any."""
    terms = ", ".join(shown(t).replace("_", " ") for t in (purchase_option, offering_class) if t)
    return shown(pricing).replace("_", " ").replace("on demand", "on-demand"), terms


def fold_zones(offers: pl.DataFrame) -> pl.DataFrame:
    """Offers that differ only by zone (one price, so every figure alike) as one row naming its zones; the order of
    `gpucost offers` kept."""
    if offers.is_empty():
        return offers.with_columns(pl.lit(None, pl.List(pl.String)).alias("zones"))
    keys = [c for c in offers.columns if c not in ("zone", "position_in_workload")]
    return (offers.with_row_index("_order")
            .group_by(keys, maintain_order=True)
            .agg(pl.col("_order").min(), pl.col("zone").drop_nulls().sort().alias("zones"))
            .sort("_order").drop("_order"))


def exact(value: float | None) -> str:
    """A figure the page's filters compare with a bound typed in: 12 significant figures (as `gpucost offers`
    compares, for any bound typed with fewer), '' for none."""
    return "" if value is None else f"{value:.12g}"


def offer_rows(offers: pl.DataFrame, rank_column: str) -> list[OfferRow]:
    rows = []
    for row in fold_zones(offers).iter_rows(named=True):
        pricing, commitment = pricing_label(row["pricing"], row["purchase_option"], row["offering_class"])
        instances = row["instances"]
        low, high = row["usd_per_mtoken_low"], row["usd_per_mtoken_high"]
        rows.append(OfferRow(
            rank=row[rank_column], provider=shown(row["provider"]), place=shown(places(row["region"], row["zones"])),
            region=shown(row["region"]), zones=[shown(z) for z in row["zones"]],
            instances=f"{instances} × " if instances and instances > 1 else "",
            instance_type=shown(row["instance_type"]),
            pricing=pricing, commitment=commitment, gpu=shown(row["gpu"]), gpus=f"{row['gpus']}×{shown(row['gpu'])}",
            machine=shown(network(row)), hours=figure(row["expected_hours"]),
            total_usd=f"${figure(row['expected_total_usd'])}",
            usd_per_mtoken=usd(row["usd_per_mtoken"]),
            interval="-" if low is None or high is None else f"{usd(low)}-{usd(high)}",
            co2e_kg="-" if row["co2e_kg"] is None else figure(row["co2e_kg"]),
            trust=shown(row["trust"]),
            extrapolated=shown((row["extrapolation"] or "").replace(",", ", ")),
            sort_values={"rank": str(row[rank_column]), "hours": exact(row["expected_hours"]),
                         "usd": exact(row["expected_total_usd"]), "mtok": exact(row["usd_per_mtoken"]),
                         "co2": exact(row["co2e_kg"])},
        ))
    return rows


def chart_data(points: pl.DataFrame) -> dict[str, Any]:
    """One workload's chart: x hours, y $/Mtoken with its interval, a label per point, the Pareto front marked;
    the offers behind the front thinned to what the chart can show apart."""
    points = points.with_columns(pareto_front(points))
    front = points.filter(pl.col("on_pareto_front"))
    rest = points.filter(~pl.col("on_pareto_front"))
    cell = [(pl.col(c).log10() / CHART_LOG10_RESOLUTION).round(0).alias(f"_{c}_cell")
            for c in ("expected_hours", "usd_per_mtoken")]
    rest = rest.with_columns(cell).unique([c.meta.output_name() for c in cell], keep="first", maintain_order=True)
    drawn = pl.concat([front, rest.select(front.columns)]).sort("expected_hours", "usd_per_mtoken")

    def rounded(column: str) -> list[float]:
        return [float(f"{v:.4g}") for v in drawn[column]]

    labels = [
        f"{shown(r['provider'])} {shown(places(r['region'], [r['zone']]))} {shown(r['pricing']).replace('_', '-')}: "
        f"{r['instances']} × {shown(r['instance_type'])}, {r['gpus']}×{shown(r['gpu'])}: "
        f"${usd(r['usd_per_mtoken'])}/Mtok ({usd(r['usd_per_mtoken_low'])}-{usd(r['usd_per_mtoken_high'])}), "
        f"{figure(r['expected_hours'])} h"
        for r in drawn.iter_rows(named=True)]
    return {"hours": rounded("expected_hours"), "mtok": rounded("usd_per_mtoken"),
            "low": rounded("usd_per_mtoken_low"), "high": rounded("usd_per_mtoken_high"),
            "front": [bool(v) for v in drawn["on_pareto_front"]], "label": labels,
            "offers": points.height, "drawn": drawn.height}


def workload_facts(row: dict[str, Any], configured: dict[str, Any] | None) -> list[tuple[str, str]]:
    """What the workload is: from the ranking's own columns, and its shape from the workloads file where it still
    names it."""
    facts = [("type", shown(row["workload_type"])), ("token budget", f"{row['token_budget']:,.0f} tokens"),
             ("deadline", "none" if row["deadline_hours"] is None else f"{figure(row['deadline_hours'])} h"),
             ("at most", f"{row['max_gpus']:,} GPUs" if row["max_gpus"] else "no GPU limit"),
             ("precision", shown(row["run_precision"]))]
    if configured:
        shape = [f"{configured['params_b']:g}B parameters"]
        if configured.get("active_params_b") and configured["active_params_b"] != configured["params_b"]:
            shape.append(f"{configured['active_params_b']:g}B active")
        if configured.get("seq_len"):
            shape.append(f"{configured['seq_len']:,}-token context")
        if configured.get("n_layers") and configured.get("d_model"):
            shape.append(f"{configured['n_layers']} layers × {configured['d_model']:,}")
        if configured.get("moe_experts"):
            shape.append(f"{configured['moe_experts']} experts, top-{configured['moe_top_k']}")
        facts.insert(0, ("shape", ", ".join(shape)))
        if configured.get("description"):
            facts.insert(0, ("what", shown(configured["description"])))
    return facts


CHAMPION_METRICS = ("best_score", "baseline_score", "interval/level", "interval_coverage/gpu",
                    "interval_coverage/precision", "interval_coverage/source_group", "interval/seen_low",
                    "interval/seen_high", "interval/unseen_low", "interval/unseen_high")


def records(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return [{k: (shown(v) if isinstance(v, str) else v) for k, v in row.items()} for row in frame.iter_rows(named=True)]


def build_report(con: duckdb.DuckDBPyConnection, configured_workloads: pl.DataFrame | None,
                 offers_per_table: int = OFFERS_PER_TABLE) -> Report:
    """The page's view model from the published database `con` (read-only) and the workloads file's rows (for
    each workload's shape; None: the ranking's own columns only)."""
    night = (query(con, "report/night").fetchall() or [(None, None, None)])[0]
    by_cost = ranked_offers(con, OfferFilter(limit=offers_per_table, sort_by="cost"))
    by_time = ranked_offers(con, OfferFilter(limit=offers_per_table, sort_by="time"))
    points = query(con, "report/chart_points").pl()
    configured = ({r["workload"]: r for r in configured_workloads.iter_rows(named=True)}
                  if configured_workloads is not None else {})
    sections = []
    for row in query(con, "report/workloads").pl().iter_rows(named=True):
        name = row["workload"]
        mine = points.filter(pl.col("workload") == name)
        chart = chart_data(mine) if not mine.is_empty() else {}
        front_gpus = sorted({g for g, on in zip(mine["gpu"], pareto_front(mine), strict=True) if on}) \
            if not mine.is_empty() else []
        sections.append(WorkloadSection(
            name=shown(name), facts=workload_facts(row, configured.get(name)), ranked_offers=row["ranked_offers"],
            not_ranked_offers=row["not_ranked_offers"],
            by_cost=offer_rows(by_cost.filter(pl.col("workload") == name), "rank_by_cost"),
            by_time=offer_rows(by_time.filter(pl.col("workload") == name), "rank_by_time"),
            chart=chart, front_gpus=[shown(g) for g in front_gpus]))
    gpus_on_fronts = sorted({g for s in sections for g in s.front_gpus})
    both = pl.concat([by_cost, by_time])
    filters = {
        "gpu": sorted({shown(v) for v in both["gpu"].drop_nulls()}),
        "provider": sorted({shown(v) for v in both["provider"].drop_nulls()}),
        "region": sorted({shown(v) for v in both["region"].drop_nulls()}),
        "pricing": sorted({pricing_label(v, None, None)[0] for v in both["pricing"].drop_nulls()}),
    }
    models = query(con, "report/model_versions").pl()
    champion_figures: list[tuple[str, str]] = []
    if not models.is_empty() and models["is_champion"][0]:
        metrics = json.loads(models["metrics"][0] or "{}")
        champion_figures = [(shown(k), f"{metrics[k]:.4g}") for k in CHAMPION_METRICS if k in metrics]
    history = query(con, "report/price_history", {"gpus": gpus_on_fronts}).pl()
    return Report(
        publish_date=night[0], published_at=night[1], model_version=shown(night[2]) if night[2] else None,
        workloads=sections, filters=filters,
        price_ages=records(query(con, "report/price_age").pl()),
        fetch_status=records(query(con, "report/fetch_status").pl()),
        quarantine=records(query(con, "report/quarantine").pl()),
        models=records(models.drop("metrics")), champion_figures=champion_figures,
        price_history=price_history_chart(history),
        ranking_history=records(query(con, "report/ranking_history", {"gpus": gpus_on_fronts}).pl()),
        offers_per_table=offers_per_table,
    )


def price_history_chart(history: pl.DataFrame) -> dict[str, Any]:
    """Per GPU: the days observed, and per pricing the lowest USD per GPU-hour that day (null where none)."""
    charts: dict[str, Any] = {}
    for (gpu,), rows in history.group_by("gpu", maintain_order=True):
        days = sorted(set(rows["observed_on"]))
        series = {}
        for (pricing,), prices in rows.group_by("pricing", maintain_order=True):
            by_day = dict(zip(prices["observed_on"], prices["lowest_usd_per_gpu_hour"], strict=True))
            series[pricing_label(str(pricing), None, None)[0]] = [
                None if by_day.get(d) is None else float(f"{by_day[d]:.4g}") for d in days]
        charts[shown(gpu)] = {"days": [datetime.combine(d, datetime.min.time()).timestamp() for d in days],
                              "series": series, "observations": rows.height}
    return charts


def script_hash(script: str) -> str:
    """The Content-Security-Policy source that lets exactly this inline script run."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


def render(report: Report) -> str:
    """The page's HTML: the template with the styles and scripts inlined. Its Content-Security-Policy lets nothing
    be fetched and only the page's two scripts run (by hash): a name that got past the escaping as markup (an
    `onerror=` attribute, a `<script>`) would still run nothing."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # start-up time: only the report needs it

    environment = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)
    environment.filters["script_json"] = script_json
    uplot_js = (ASSETS / "uplot" / "uPlot.iife.min.js").read_text(encoding="utf-8").replace(UPLOT_BANNER,
                                                                                            UPLOT_NOTICE)
    page_js = (ASSETS / "report.js").read_text(encoding="utf-8")
    csp = (f"default-src 'none'; script-src {script_hash(uplot_js)} {script_hash(page_js)}; "
           "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'")
    return environment.get_template("index.html.j2").render(
        report=report, csp=csp, usd=usd,
        uplot_css=(ASSETS / "uplot" / "uPlot.min.css").read_text(encoding="utf-8"),
        uplot_js=uplot_js, page_css=(ASSETS / "report.css").read_text(encoding="utf-8"),
        page_js=page_js, uplot_version=UPLOT_VERSION,
    )


def write_report(published: Path, target: Path, configured_workloads: pl.DataFrame | None,
                 offers_per_table: int = OFFERS_PER_TABLE) -> ReportFile:
    """Render the page from the published database at `published` and put it at `target` atomically (written
    under a temporary name beside it, then `os.replace`d: a reader never sees half a page)."""
    started = time.perf_counter()
    if not published.exists():
        raise FileNotFoundError(f"no published ranking at {published}: run `gpucost run` (or `gpucost publish`) "
                                "first")
    with duckdb.connect(str(published), read_only=True) as con:
        html = render(build_report(con, configured_workloads, offers_per_table))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(html, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return ReportFile(target, target.stat().st_size, time.perf_counter() - started)
