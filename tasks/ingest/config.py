"""config/settings.toml [ingest]: how the ingest flows run their files and bound DuckDB's memory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from tasks import config
from tasks.config import Count, Strict
from tasks.settings import paths

INGEST_RUNNERS = ("threads", "sequential", "dask")   # how the ingest flows run their files (flows/ingest_runner.py)


class IngestRunner(Strict):
    # sequential by default: neither pool beat it on the 2-core bench (docs/operations.md, parallel ingest)
    kind: Literal[INGEST_RUNNERS] = "sequential"  # type: ignore[valid-type]
    workers: Count = 2
    threads_per_worker: Count = 1

    @property
    def parallel(self) -> bool:
        """Staged by a Prefect task runner (threads or Dask), the flow applying the files in order."""
        return self.kind != "sequential"


class IngestSettings(Strict):
    memory_limit: str = "600MB"
    temp_directory: str = "duckdb_spill"
    # landed files no current row refers to are removed this many days after their ingest; None: all kept
    landing_retention_days: Annotated[int, Field(ge=0)] | None = None
    runner: IngestRunner = IngestRunner()


def ingest_settings() -> IngestSettings:
    """config/settings.toml [ingest] (the entry points validated the whole file)."""
    return config.load_section("settings", ("ingest",), IngestSettings)


def ingest_spill() -> Path:
    """Where DuckDB spills while a file is ingested against the warehouse: [ingest] temp_directory in GPUCOST_HOME."""
    return paths().home / ingest_settings().temp_directory
