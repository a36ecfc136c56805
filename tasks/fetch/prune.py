"""Delete download folders older than `keep_days`. What was ingested from them stays in the warehouse
(raw.downloads, raw.ingested_files and the landed copy of each ingested file, by content hash)."""

from __future__ import annotations

import shutil
from datetime import date, datetime, timedelta
from pathlib import Path


def prune_downloads(root: Path, keep_days: int, today: date) -> list[Path]:
    """Remove `root/<provider>/<YYYY-MM-DD>/` folders dated before today - keep_days; returns them."""
    cutoff = today - timedelta(days=keep_days)
    removed: list[Path] = []
    if not root.exists():
        return removed
    for folder in sorted(root.glob("*/*")):
        try:
            dated = datetime.strptime(folder.name, "%Y-%m-%d").date()
        except ValueError:
            continue  # not a download day folder: leave it alone
        if folder.is_dir() and dated < cutoff:
            shutil.rmtree(folder)
            removed.append(folder)
    return removed
