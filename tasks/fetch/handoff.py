"""The one place where fetched files enter the price ingest: the adapters that already read these formats
parse them, exactly as they parse the files named in config/sources.toml."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb

from tasks.fetch.context import FetchedFile
from tasks.ingest.config import IngestLimits
from tasks.ingest.landing import recover
from tasks.ingest.registry import FileOutcome
from tasks.prices.config import PriceValidation
from tasks.prices.ingest import PriceSource, ingest_price_file
from tasks.reference import ReferenceFiles, load_reference_tables, read_aliases, reference_paths


@dataclass(frozen=True)
class PriceIngest:
    """How fetched files are ingested, as the entry point loaded it: config/settings.toml [validation.prices],
    [reference] and the [ingest] bounds."""

    validation: PriceValidation
    reference: ReferenceFiles
    limits: IngestLimits


def ingest_fetched(
    con: duckdb.DuckDBPyConnection, files: Sequence[FetchedFile], fetched_at: datetime, ingest: PriceIngest
) -> list[FileOutcome]:
    """Ingest downloaded files through their adapters. `fetched_at` is the ingest time, so prices whose
    file carries no date of its own (Azure retail, SkyPilot catalogs) are observed at the fetch time."""
    if not files:
        return []
    recover(con)  # what a killed ingest left in the landing zone
    files_by_name = reference_paths(ingest.reference)
    load_reference_tables(con, files_by_name)
    aliases = read_aliases(files_by_name["gpu_aliases"])
    return [
        ingest_price_file(con, PriceSource(f.path, f.provider, f.format, dict(f.options)), aliases, fetched_at,
                          validation=ingest.validation, reference_dir=files_by_name["folder"], limits=ingest.limits)
        for f in files
    ]
