"""Run summaries a person reads: per file, rows loaded, quarantined by reason, skipped, notes. Names and reasons come
from the files (a provider's GPU or instance name inside a reason): shown escaped (tasks/display.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TypedDict

from tasks.display import printable
from tasks.ingest.registry import FileOutcome


def outcome_rows(outcomes: Sequence[FileOutcome]) -> list[dict[str, object]]:
    return [
        {
            "file": o.source_file.rsplit("/", 1)[-1],
            "provider": o.provider or "",
            "format": o.format or "",
            "status": o.status,
            "read": o.rows_read,
            "loaded": o.rows_loaded,
            "quarantined": o.rows_quarantined,
            "skipped": o.rows_skipped,
            "error": o.error or "",
        }
        for o in outcomes
    ]


def outcome_line(o: FileOutcome) -> str:
    """One file's outcome in a few words, for progress lines (file name last: the part a narrow line may cut)."""
    name = printable(o.source_file.rsplit("/", 1)[-1])
    if o.status == "already_ingested":
        again = f"; its landed file was {o.landed_again}, landed again from these bytes" if o.landed_again else ""
        return f"already ingested{again}: {name}"
    if o.status == "quarantined":
        return f"quarantined whole ({printable(o.error or 'unreadable')}): {name}"
    extra = "".join(f", {n:,} {what}" for n, what in ((o.rows_quarantined, "quarantined"),
                                                       (o.rows_skipped, "skipped")) if n)
    return f"{o.rows_loaded:,} rows loaded{extra}: {name}"


class Totals(TypedDict):
    files: int
    files_loaded: int
    files_already_ingested: int
    files_quarantined: int
    rows_loaded: int
    rows_quarantined: int
    rows_skipped: int
    quarantined_by_reason: dict[str, int]
    skipped_by_reason: dict[str, int]


def totals(outcomes: Sequence[FileOutcome]) -> Totals:
    quarantined: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    for o in outcomes:
        quarantined.update(o.quarantined_by_reason)
        skipped.update(o.skipped_by_reason)
    return {
        "files": len(outcomes),
        "files_loaded": sum(o.status == "loaded" for o in outcomes),
        "files_already_ingested": sum(o.status == "already_ingested" for o in outcomes),
        "files_quarantined": sum(o.status == "quarantined" for o in outcomes),
        "rows_loaded": sum(o.rows_loaded for o in outcomes),
        "rows_quarantined": sum(o.rows_quarantined for o in outcomes),
        "rows_skipped": sum(o.rows_skipped for o in outcomes),
        "quarantined_by_reason": dict(quarantined.most_common()),
        "skipped_by_reason": dict(skipped.most_common()),
    }


def outcomes_markdown(title: str, outcomes: Sequence[FileOutcome]) -> str:
    t = totals(outcomes)
    lines = [
        f"# {title}",
        "",
        f"{t['files']} files: {t['files_loaded']} loaded, {t['files_already_ingested']} already ingested, "
        f"{t['files_quarantined']} quarantined. Rows: {t['rows_loaded']} loaded, "
        f"{t['rows_quarantined']} quarantined, {t['rows_skipped']} skipped (out of scope).",
        "",
        "| file | provider | format | status | read | loaded | quarantined | skipped | error |",
        "|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    for row in outcome_rows(outcomes):
        lines.append("| " + " | ".join(printable(str(v)).replace("|", "\\|") for v in row.values()) + " |")
    if t["quarantined_by_reason"]:
        lines += ["", "## Quarantined rows by reason", ""]
        lines += [f"- {count} × {printable(reason)}" for reason, count in t["quarantined_by_reason"].items()]
    if t["skipped_by_reason"]:
        lines += ["", "## Skipped (out of scope) by reason", ""]
        lines += [f"- {count} × {printable(reason)}" for reason, count in t["skipped_by_reason"].items()]
    notes = [f"- {printable(o.source_file.rsplit('/', 1)[-1])}: {printable(n)}" for o in outcomes for n in o.notes]
    if notes:
        lines += ["", "## Notes", "", *notes]
    return "\n".join(lines) + "\n"
