"""How the ingest flows run their files (config/settings.toml [ingest.runner]).

`threads` (the default) and `dask`: every file is read, staged and validated by a task on a Prefect task
runner - Prefect's ThreadPoolTaskRunner with `workers` threads in the flow's process, or prefect-dask's
DaskTaskRunner over a `distributed.LocalCluster` of `workers` processes - which takes paths and returns
Parquet files in a work folder (tasks.ingest.lifecycle.stage_file); the flow, the one writer, applies them
in the given order, one transaction per file (apply_staged), while later files are still being staged.
`sequential`: each file through the whole lifecycle on the flow's warehouse connection, one after another.
Same warehouse every way.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import duckdb
from prefect import task

from flows.retries import io_task_options, with_retries
from tasks import progress
from tasks.config_files import Settings
from tasks.extras import require
from tasks.ingest.config import IngestRunner
from tasks.ingest.lifecycle import Dataset, StagedFile, StageJob, apply_staged, stage_file, stage_jobs
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


@task(**io_task_options("stage-file"))
def stage_file_task(job: StageJob) -> StagedFile:
    return stage_file(job)


def ingest_in_parallel(
    con: duckdb.DuckDBPyConnection,
    dataset: Dataset,
    sources: list[FileSource],
    ingested_at: datetime,
    runner: IngestRunner,
    unreadable: Callable[[FileSource, BaseException], FileOutcome],
    label: str,
    settings: Settings,
    resources: Resources,
) -> list[FileOutcome]:
    """Stage every file on the runner's workers; apply them in order on `con`. A file still failing with an
    I/O error after its task's retries goes to `unreadable` (quarantined for tonight, as sequentially)."""
    workdir = resources.home / "staging" / uuid.uuid4().hex
    limits = settings.ingest.limits(resources.home)
    jobs = stage_jobs(con, dataset, sources, ingested_at, workdir, reference_paths(settings.reference),
                      settings.ingest.memory_limit)
    outcomes: list[FileOutcome] = []
    try:
        with task_runner(runner) as pool:
            stage = with_retries(stage_file_task, settings.prefect)
            futures = [pool.submit(stage, {"job": job}) for job in jobs]
            for number, (job, future) in enumerate(zip(jobs, futures, strict=True), start=1):
                try:
                    staged = future.result()
                except OSError as error:  # still failing after the task's retries: tonight without this file
                    outcomes.append(unreadable(job.source, error))
                else:
                    outcomes.append(apply_staged(con, dataset, staged, ingested_at, limits))
                progress.step("%s: file %d of %d: %s", label, number, len(jobs), outcome_line(outcomes[-1]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return outcomes
