"""Ingest training runs from MLflow: the MLflow reader (tasks/telemetry/mlflow_source.py) plugged into the
telemetry ingest through one seam, `ingest_telemetry_records` (the same normalisation, validation,
quarantine and storage by run_id with history as telemetry files).

Each run is one unit, named `mlflow:<run_id>` and registered in raw.ingested_files by its fingerprint (what
the run said when read): an unchanged run is never read twice; a run that changed (resumed and finished again,
edited params) has a new fingerprint and replaces its older record, which moves to history. Reads are
incremental: only runs that ended after the newest run already read from that server and experiment
(raw.mlflow_runs, minus a look-back) are listed. A run still running is skipped (read once finished); a run
that cannot become a telemetry row (a required mapped field missing, no throughput points) is quarantined in
quarantine.rejected_rows with its run id and the reason.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import duckdb
import polars as pl

from tasks.contract.schema import TelemetryValidation
from tasks.ingest.config import IngestLimits
from tasks.ingest.quarantine import quarantine_rows
from tasks.ingest.registry import FileOutcome, already_ingested, record_file
from tasks.sources import Sources
from tasks.telemetry.config import MlflowTelemetry
from tasks.telemetry.ingest import DATASET, ingest_telemetry_records
from tasks.telemetry.mlflow_source import (
    SOURCE_PREFIX,
    MlflowSource,
    RunRecord,
    fingerprint,
    list_runs,
    load_mapping,
    read_run,
    records_frame,
    redact_uri,
)
from tasks.warehouse import execute, query, transaction


def configured_mlflow_sources(sources: Sources) -> list[MlflowSource]:
    """The [[mlflow]] entries of config/sources.toml (or `sources`): tracking_uri, experiments, mapping."""
    return [MlflowSource(e.tracking_uri, tuple(e.experiments), e.mapping) for e in sources.mlflow]


def watermarks(con: duckdb.DuckDBPyConnection, tracking_uri: str, lookback_minutes: int) -> dict[str, int]:
    rows = query(con, "telemetry/mlflow/watermarks",
                 {"tracking_uri": tracking_uri, "lookback_minutes": lookback_minutes}).fetchall()
    return {experiment_id: int(ms) for experiment_id, ms in rows}


def _ledger(
    con: duckdb.DuckDBPyConnection, uri: str, record: RunRecord, experiment_name: str, mapping: str,
    read_at: datetime,
) -> None:
    execute(con, "telemetry/mlflow/insert_run", {
        "tracking_uri": uri, "experiment_id": record.experiment_id, "experiment_name": experiment_name,
        "run_id": record.run_id, "end_time": record.end_time, "sha": record.fingerprint, "mapping": mapping,
        "throughput_points": record.throughput_points, "power_samples": record.power_samples,
        "problem": record.problem, "read_at": read_at,
    })


def _quarantine_run(
    con: duckdb.DuckDBPyConnection, record: RunRecord, outcome: FileOutcome, ingested_at: datetime
) -> None:
    """A run that cannot become a row: one rejected row naming the run and the reason; the unit is registered
    (the same run is not read again until it changes)."""
    outcome.rows_read = 1
    outcome.rows_quarantined = 1
    outcome.quarantined_by_reason = {record.problem or "": 1}
    rejected = pl.DataFrame({
        "source_file": [record.source_ref], "source_line": [1],
        "failed_check": [f"MLflow run {record.run_id}: {record.problem}"],
        "raw_values": [json.dumps(record.values)], "content_sha256": [record.fingerprint],
    }, schema={"source_file": pl.String, "source_line": pl.Int64, "failed_check": pl.String,
               "raw_values": pl.String, "content_sha256": pl.String})
    with transaction(con):
        quarantine_rows(con, DATASET, rejected, ingested_at)
        record_file(con, outcome, 0, ingested_at)


def ingest_mlflow_source(
    con: duckdb.DuckDBPyConnection,
    source: MlflowSource,
    aliases: pl.DataFrame,
    ingested_at: datetime,
    *,
    vocabulary: dict[str, dict[str, Any]],
    validation: TelemetryValidation,
    settings: MlflowTelemetry,
    limits: IngestLimits,
    rescan: bool = False,
) -> list[FileOutcome]:
    """Read the source's finished runs since the last read (all of them with `rescan`) into the warehouse;
    `vocabulary`, `validation` and `settings` from config/telemetry.toml and config/mlflow_telemetry.toml."""
    from mlflow.tracking import MlflowClient

    defaults = settings.defaults
    mapping = load_mapping(source.mapping, settings)
    uri = redact_uri(source.tracking_uri)
    client = MlflowClient(source.tracking_uri)
    since = {} if rescan else watermarks(con, uri, int(defaults.lookback_minutes))
    listed = list_runs(client, source.experiments, since, defaults.page_size)
    fmt = f"mlflow/{source.mapping}"
    outcomes = [
        FileOutcome(DATASET, f"{SOURCE_PREFIX}{run_id}", "", "skipped", format=fmt, rows_skipped=1,
                    skipped_by_reason={reason: 1}, error=reason)
        for run_id, reason in listed.skipped
    ]
    for run in listed.finished:
        ref = f"{SOURCE_PREFIX}{run.info.run_id}"
        sha = fingerprint(run, source.mapping)
        if already_ingested(con, DATASET, sha):
            outcomes.append(FileOutcome(DATASET, ref, sha, "already_ingested", format=fmt))
            continue
        experiment_name = listed.experiment_names[run.info.experiment_id]
        record = read_run(client, run, mapping, experiment_name)
        outcome = FileOutcome(DATASET, ref, sha, "loaded", format=fmt)
        if record.problem is not None:
            _quarantine_run(con, record, outcome, ingested_at)
        else:
            frame = records_frame([record])
            outcome = ingest_telemetry_records(con, frame, outcome, 0, aliases, ingested_at, vocabulary=vocabulary,
                                               validation=validation, limits=limits)
            outcome.notes.append(
                f"tokens/s per GPU = median of {record.throughput_points} points; "
                + (f"avg_power_w from {record.power_samples} GPU power samples"
                   if record.power_samples else "no GPU power samples in the window")
            )
        # the ledger is written after the run is stored: a crash in between re-reads the run next time,
        # and its fingerprint (registered with the run) makes that a no-op
        with transaction(con):
            _ledger(con, uri, record, experiment_name, source.mapping, ingested_at)
        outcomes.append(outcome)
    return outcomes
