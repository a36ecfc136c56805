"""What people look at after a publish: top offers per workload, a markdown summary, and a chart of
dollars per million tokens against hours to finish with the Pareto front marked."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import duckdb
import polars as pl

from tasks.publishing.database import PublishedFile
from tasks.ranking.offers import trust_column
from tasks.ranking.rank import RankingResult
from tasks.warehouse import query


def top_offers(con: duckdb.DuckDBPyConnection, publish_date: date, top: int) -> pl.DataFrame:
    """The best `top` offers per workload, with the trust mark next to each (tasks/ranking/offers.py)."""
    frame: pl.DataFrame = query(con, "marts/top_offers", {"publish_date": publish_date, "top": top}).pl()
    return frame.with_columns(trust_column()).drop("telemetry_runs_for_gpu")


def pareto_front(points: pl.DataFrame, x: str = "expected_hours", y: str = "usd_per_mtoken") -> pl.Series:
    """True for rows no other row beats on both x and y (lower is better on both); per frame, so
    call it per workload. Ties on x keep the cheapest only. Vectorised: in (x, y) order a row is on
    the front when its y is below the smallest y of every row before it."""
    best_before = pl.col(y).cum_min().shift(1, fill_value=float("inf"))
    flagged = (
        points.select(x, y)
        .with_row_index("_row")
        .sort([x, y])
        .with_columns(on_pareto_front=pl.col(y) < best_before)
        .sort("_row")
    )
    return flagged["on_pareto_front"]


# Offers behind the front are drawn as a cloud; points closer than this (in log10 units, on both axes)
# than one already drawn would land on the same pixel of the 110 dpi chart, so one of each is drawn.
CLOUD_LOG10_RESOLUTION = 1e-3


def thin_cloud(points: pl.DataFrame, x: str = "expected_hours", y: str = "usd_per_mtoken") -> pl.DataFrame:
    """One point per (log10 x, log10 y) cell of CLOUD_LOG10_RESOLUTION: the same picture, far fewer markers."""
    cell = [(pl.col(c).log10() / CLOUD_LOG10_RESOLUTION).round(0).alias(f"_{c}_cell") for c in (x, y)]
    return points.with_columns(cell).unique([f"_{x}_cell", f"_{y}_cell"], keep="first", maintain_order=True)


def write_chart(points: pl.DataFrame, path: Path, title: str) -> Path | None:
    """One panel per workload; log-log axes; the Pareto front drawn as a line. None without points."""
    if points.is_empty():
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogFormatter

    class PlainLogFormatter(LogFormatter):
        def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:  # 0.1, 2000 (not 1e-01, 2e+03)
            return f"{x:g}"

    # Plain tick labels (0.1, 1, 10; minor ones where an axis spans under a decade) and fixed margins:
    # matplotlib's default log labels are mathtext and tight_layout measures every label; together they
    # were 3/4 of a publish's time, for the same picture.
    workloads = points["workload"].unique(maintain_order=True).to_list()
    width_in, height_in = 5.5 * len(workloads), 4.5
    fig, axes = plt.subplots(1, len(workloads), figsize=(width_in, height_in), squeeze=False)
    fig.subplots_adjust(left=0.8 / width_in, right=1 - 0.2 / width_in, bottom=0.55 / height_in,
                        top=1 - 0.75 / height_in, wspace=0.3)
    for ax, workload in zip(axes[0], workloads, strict=True):
        panel = points.filter(pl.col("workload") == workload)
        panel = panel.with_columns(pareto_front(panel))
        rest, front = thin_cloud(panel.filter(~pl.col("on_pareto_front"))), panel.filter(pl.col("on_pareto_front"))
        ax.scatter(rest["expected_hours"], rest["usd_per_mtoken"], s=8, alpha=0.35, label="offers")
        ax.plot(front["expected_hours"], front["usd_per_mtoken"], "o-", color="crimson", ms=4, label="Pareto front")
        for row in front.head(6).iter_rows(named=True):
            ax.annotate(f"{row['gpu']} {row['pricing']}", (row["expected_hours"], row["usd_per_mtoken"]),
                        fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(PlainLogFormatter())
            axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))
        ax.set_xlabel("hours to finish (expected)")
        ax.set_ylabel("USD per million tokens")
        ax.set_title(workload)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)
    return path


def summary_markdown(
    ranking: RankingResult,
    published: PublishedFile | None,
    top: pl.DataFrame,
    chart: Path | None,
    notes: list[str],
) -> str:
    lines = [f"# GPU cost ranking, {ranking.publish_date.isoformat()}", ""]
    model = ranking.model_version or "none"
    lines.append(f"Model version: {model}. Rows: {ranking.rows} (workload x offer), ranked: {ranking.ranked}, "
                 f"throughput predictions: {ranking.predictions}.")
    for warning in ranking.warnings:
        lines += ["", f"**{warning}**"]
    if published is not None:
        rows = ", ".join(f"{t} {n}" for t, n in published.rows.items())
        lines += ["", f"Published `{published.path}` in {published.seconds:.1f} s ({rows})."]
    if chart is not None:
        lines.append(f"Chart: `{chart}`.")
    for message in ranking.messages + notes:
        lines += ["", f"- {message}"]
    if ranking.not_ranked_by_reason:
        lines += ["", "## Not ranked, by reason", ""]
        lines += [f"- {count} × {reason}" for reason, count in ranking.not_ranked_by_reason.items()]
    if not top.is_empty():
        lines += ["", "## Top offers per workload", "", "| " + " | ".join(top.columns) + " |",
                  "|" + "---|" * len(top.columns)]
        lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in top.iter_rows()]
    return "\n".join(lines) + "\n"
