"""The one place where fetched files enter the price ingest: the adapters that already read these formats
parse them, exactly as they parse the files named in config/sources.toml."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import duckdb

from tasks.fetch.context import FetchedFile
from tasks.ingest.landing import recover
from tasks.ingest.registry import FileOutcome
from tasks.prices.ingest import PriceSource, ingest_price_file
from tasks.reference import load_reference_tables, read_aliases


def ingest_fetched(
    con: duckdb.DuckDBPyConnection, files: Sequence[FetchedFile], fetched_at: datetime
) -> list[FileOutcome]:
    """Ingest downloaded files through their adapters. `fetched_at` is the ingest time, so prices whose
    file carries no date of its own (Azure retail, SkyPilot catalogs) are observed at the fetch time."""
    if not files:
        return []
    # Imported here: the ingest loads Great Expectations, which the downloads themselves never need.

    recover(con)  # what a killed ingest left in the landing zone
    load_reference_tables(con)
    aliases = read_aliases()
    return [
        ingest_price_file(con, PriceSource(f.path, f.provider, f.format, dict(f.options)), aliases, fetched_at)
        for f in files
    ]
