"""How the ingest flows run their files: stage -> apply for every file (tasks/ingest/lifecycle.py), the flow the one
writer, in the given order (one transaction per file; a file staged inline adds one before it that writes TEMP
tables only). config/settings.toml [ingest.runner] says only where
staging runs:

`sequential` (the default): inline, in each file's first transaction on the flow's warehouse connection; the staged
tables are live there, nothing is written out. `threads` and `dask`: on a Prefect task runner - Prefect's
ThreadPoolTaskRunner with `workers` threads in the flow's process, or prefect-dask's DaskTaskRunner over a
`distributed.LocalCluster` of `workers` processes - each file on a private DuckDB, handed over as Parquet in a
work folder (tasks.ingest.lifecycle.stage_unit) while the flow applies the files staged before it. Same warehouse
every way.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Protocol

import duckdb
from prefect import task

from flows.retries import io_task_options, with_retries
from tasks import progress
from tasks.config_files import Settings
from tasks.extras import require
from tasks.ingest.config import IngestLimits, IngestRunner
from tasks.ingest.lifecycle import Dataset, StageJob, Unit, apply, quarantine_unreadable, stage_jobs, stage_unit
from tasks.ingest.registry import FileOutcome
from tasks.ingest.source import FileSource
from tasks.reference import reference_paths
from tasks.settings import Resources
from tasks.summary import outcome_line


def task_runner(runner: IngestRunner) -> Any:
    """The Prefect task runner that stages the files: a thread pool in this process, or a Dask cluster."""
    if runner.kind == "dask":
        return dask_task_runner(runner)
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=runner.workers)


def dask_task_runner(runner: IngestRunner) -> Any:
    """A DaskTaskRunner that starts (and on exit stops) a LocalCluster of worker processes on loopback."""
    require("dask", 'the Dask ingest runner ([ingest.runner] kind = "dask")')
    from prefect_dask.task_runners import DaskTaskRunner

    return DaskTaskRunner(
        cluster_class="distributed.LocalCluster",
        cluster_kwargs={
            "n_workers": runner.workers,
            "threads_per_worker": runner.threads_per_worker,
            "processes": True,
            "host": "127.0.0.1",
            "dashboard_address": None,  # no web UI port
        },
    )


class Staging(Protocol):
    """A unit being staged: `result()` waits for it (raises the worker's error)."""

    def result(self) -> Unit: ...


@task(**io_task_options("stage-file"))
def stage_task(job: StageJob) -> Unit:
    return stage_unit(job)


@task(**io_task_options("ingest-file"))
def apply_task(
    con: duckdb.DuckDBPyConnection, dataset: Dataset, unit: Unit, ingested_at: datetime, limits: IngestLimits
) -> FileOutcome:
    return apply(con, dataset, unit, ingested_at, limits)


def ingest_files(
    con: duckdb.DuckDBPyConnection,
    dataset: Dataset,
    sources: list[FileSource],
    ingested_at: datetime,
    label: str,
    settings: Settings,
    resources: Resources,
) -> list[FileOutcome]:
    """Every file staged (where [ingest.runner] says) and applied in order on `con`, with a progress line each. A
    file still failing with an I/O error after its task's retries is quarantined for tonight (not registered)."""
    limits = settings.ingest.limits(resources.home)
    apply_unit = with_retries(apply_task, settings.prefect)
    outcomes: list[FileOutcome] = []
    with staged_units(con, dataset, sources, ingested_at, settings, resources) as units:
        for number, (source, staging) in enumerate(units, start=1):
            try:
                outcome = apply_unit(con, dataset, staging.result(), ingested_at, limits)
            except OSError as error:  # still failing after the task's retries: tonight without this file
                outcome = quarantine_unreadable(con, dataset.name, source, error, ingested_at)
            outcomes.append(outcome)
            progress.step("%s: file %d of %d: %s", label, number, len(sources), outcome_line(outcome))
    return outcomes


@contextmanager
def staged_units(
    con: duckdb.DuckDBPyConnection,
    dataset: Dataset,
    sources: list[FileSource],
    ingested_at: datetime,
    settings: Settings,
    resources: Resources,
) -> Iterator[Iterator[tuple[FileSource, Staging]]]:
    """(source, future unit) per file, in order: staged on the runner's workers (all submitted at once), or,
    sequentially, the file itself, which `apply` stages inline."""
    runner = settings.ingest.runner
    if not runner.parallel or not sources:
        yield ((source, _Ready(Unit(source))) for source in sources)
        return
    workdir = resources.home / "staging" / uuid.uuid4().hex
    jobs = stage_jobs(con, dataset, sources, ingested_at, workdir, reference_paths(settings.reference),
                      settings.ingest.memory_limit)
    try:
        with task_runner(runner) as pool:
            stage = with_retries(stage_task, settings.prefect)
            futures = [pool.submit(stage, {"job": job}) for job in jobs]
            yield zip(sources, futures, strict=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class _Ready:
    """A unit to stage inline, with the `result()` of one staged on a worker."""

    def __init__(self, unit: Unit) -> None:
        self.unit = unit

    def result(self) -> Unit:
        return self.unit
