"""What a person reads on the command line: the tables (offers, workloads, a query's rows, a night's summary)
and the number formats in them. Everything shown that came from data is escaped (tasks/display.py)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpucost.sql_bounds import TableResult, cell_text
from tasks.display import printable
from tasks.ingest.registry import FileOutcome
from tasks.ranking.labels import figure, network, place, usd
from tasks.summary import totals

if TYPE_CHECKING:  # start-up time: the CLI imports polars only where it needs it
    import polars as pl

out = Console()


def narrow_console() -> Console:
    """stdout for tables a person reads: the terminal's width, or 100 columns when piped or logged."""
    return out if out.is_terminal else Console(width=100)


def wrapped(text: str) -> str:
    """100 columns, continuation lines indented; paths and names are never split (a path cut at a hyphen could
    not be copied back whole)."""
    return textwrap.fill(text, 100, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)


def print_wrapped(text: str) -> None:
    narrow_console().print(wrapped(text), highlight=False)


def shown(text: object) -> str:
    """Text from data or config in a rich table: escaped, never obeyed (nor read as markup)."""
    return escape(printable(str(text)))


def print_totals(outcomes: Sequence[FileOutcome]) -> None:

    t = totals(outcomes)
    print_wrapped(f"{t['files']} file(s): {t['files_loaded']} loaded, {t['files_already_ingested']} already "
                   f"ingested, {t['files_quarantined']} quarantined; rows: {t['rows_loaded']:,} loaded, "
                   f"{t['rows_quarantined']:,} quarantined (why: the quarantine_summary table)")


def print_offers(found: pl.DataFrame, sort_by: str) -> None:
    """One narrow table per workload (fits 100 columns): the offer (provider, region and zone, instances), GPUs
    with their network, hours, $/Mtoken with its 80% interval, kg CO2e, and the trust mark (telemetry runs behind
    the GPU's prediction, or `extrapolated`)."""
    console = narrow_console()
    for (name,), rows in found.group_by("workload", maintain_order=True):
        table = Table(title=shown(f"{name}, by {sort_by}"), title_justify="left", box=None, pad_edge=False,
                      padding=(0, 1, 0, 0), show_edge=False)
        table.add_column("#", justify="right")
        table.add_column("offer", overflow="fold")
        table.add_column("pricing")
        table.add_column("GPUs", justify="right")
        table.add_column("hours", justify="right")
        table.add_column("$/Mtok", justify="right")
        table.add_column("80% interval", justify="right")
        table.add_column("t CO2e", justify="right")
        table.add_column("telemetry")
        for row in rows.iter_rows(named=True):
            instances = f"{row['instances']} × " if row["instances"] and row["instances"] > 1 else ""
            table.add_row(
                str(row["position_in_workload"] if sort_by == "co2"
                    else row["rank_by_time" if sort_by == "time" else "rank_by_cost"]),
                f"{shown(row['provider'])} {shown(place(row))}\n{instances}{shown(row['instance_type'])}",
                shown(row["pricing"].replace("_", "-")), f"{row['gpus']}×{shown(row['gpu'])}\n{shown(network(row))}",
                figure(row["expected_hours"]), usd(row["usd_per_mtoken"]),
                f"{usd(row['usd_per_mtoken_low'])}-{usd(row['usd_per_mtoken_high'])}",
                "-" if row["co2e_kg"] is None else figure(row["co2e_kg"] / 1000.0), shown(row["trust"]),
            )
        console.print(table)
        console.print()


def tokens(value: float) -> str:
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if value >= size:
            return f"{value / size:g}{unit}"
    return f"{value:g}"


def print_workloads(frame: pl.DataFrame) -> None:
    """The configured workloads, one row each, the description folded to the console's width; their text (names,
    descriptions) is escaped like data's. Laid out here in one pass, not by a rich Table, which took ~1 ms a row
    (10^5 workloads printed nothing for minutes)."""
    header = ("name", "type", "params", "tokens", "precision", "deadline", "description")
    rows = [(printable(row["workload"]), printable(row["workload_type"]), f"{row['params_b']:g}B",
             tokens(row["token_budget"]), printable(row["precision"]),
             f"{row['deadline_hours']:,.0f} h" if row["deadline_hours"] else "-", printable(row["description"] or ""))
            for row in frame.iter_rows(named=True)]
    widths = [max([cell_len(text) for text in column], default=0) for column in zip(header, *rows, strict=True)]
    # each cell is followed by one space; the description takes what the console has left (at least 20 columns)
    widths[-1] = min(widths[-1], max(narrow_console().width - sum(widths[:-1]) - len(widths), 20))
    write = sys.stdout.write
    for cells in (header, *rows):
        lines = textwrap.wrap(cells[-1], widths[-1], break_on_hyphens=False) or [""]
        first = "".join(text + " " * (width - cell_len(text) + 1)
                        for text, width in zip(cells[:-1], widths, strict=False))
        write(f"{first}{lines[0].ljust(widths[-1])} \n")
        for line in lines[1:]:
            write(f"{' ' * len(first)}{line.ljust(widths[-1])} \n")
    sys.stdout.flush()


def print_result_table(result: TableResult, max_cell_chars: int) -> None:
    """A query's rows as a table, every value escaped (control and bidirectional characters shown, not obeyed);
    a cut result or cell is said under it."""
    table = Table(*(shown(c) for c in result.columns), show_lines=False)
    cut_cells = 0
    for row in result.rows:
        cells = [cell_text(v, max_cell_chars) for v in row]
        cut_cells += sum(cut for _, cut in cells)
        table.add_row(*(escape(text) for text, _ in cells))
    # Piped or redirected output gets the table at its natural width instead of truncated cells.
    (out if out.is_terminal else Console(width=100_000)).print(table, highlight=False)
    row_count = len(result.rows)
    if result.cut:
        out.print(escape(f"{row_count} row(s) shown; the result has more (--max-rows 0 shows every row, --csv "
                         "streams them)"), style="dim", highlight=False, soft_wrap=True)
    else:
        out.print(f"{row_count} row(s)", style="dim", highlight=False)
    if cut_cells:
        out.print(escape(f"{cut_cells} cell(s) longer than {max_cell_chars:,} characters cut (config/settings.toml "
                         "[sql] max_cell_chars; --csv prints whole values)"), style="dim", highlight=False,
                  soft_wrap=True)
