"""config/settings.toml [ingest]: how the ingest flows run their files and bound DuckDB's memory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import Field

from tasks.config import Count, MemoryLimit, Strict

# how the ingest flows run their files (flows/ingest_runner.py)
IngestRunnerKind = Literal["threads", "sequential", "dask"]
INGEST_RUNNERS: tuple[IngestRunnerKind, ...] = get_args(IngestRunnerKind)


MAX_RETENTION_DAYS = 36_500


class IngestRunner(Strict):
    # sequential by default: neither pool beat it on the 2-core bench (docs/operations.md, parallel ingest)
    kind: IngestRunnerKind = "sequential"
    workers: Count = 2
    threads_per_worker: Count = 1

    @property
    def parallel(self) -> bool:
        """Staged by a Prefect task runner (threads or Dask), the flow applying the files in order."""
        return self.kind != "sequential"


class IngestSettings(Strict):
    memory_limit: MemoryLimit = "600MB"
    temp_directory: str = "duckdb_spill"
    # landed files no current row refers to are removed this many days after their ingest; None: all kept. At
    # most 100 years: the cut-off date is computed (10^9 days before now is before year 1)
    landing_retention_days: Annotated[int, Field(ge=0, le=MAX_RETENTION_DAYS)] | None = None
    runner: IngestRunner = IngestRunner()


    def limits(self, home: Path) -> IngestLimits:
        """DuckDB's bounds while a file is ingested against the warehouse: the memory cap, and temp_directory in
        the state folder `home` to spill to."""
        return IngestLimits(self.memory_limit, home / self.temp_directory)


@dataclass(frozen=True)
class IngestLimits:
    memory_limit: str
    spill: Path
