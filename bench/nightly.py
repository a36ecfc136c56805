"""5. Nightly end to end on the bundled sample: the `nightly` Prefect flow (ingest prices -> ingest telemetry
-> train -> publish), wall time per step from Prefect's own flow-run records, against the same steps as plain
functions in the same process (the work). The difference is orchestration: Prefect start-up (its temporary
local API), flow/task bookkeeping, artifacts, results.

Two processes: a cold one (fresh Prefect home: the very first start, with its database migrations) and a
warm one (Prefect home already there, a fresh GPUCOST_HOME so the pipeline does all its work again)."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import BenchConfig, Configured, Row, fresh_home, run_step, timed

SECTION = "5. nightly on the sample"
STEPS = ("ingest_prices", "ingest_telemetry", "train", "publish")


def _subflow_seconds(since: datetime) -> dict[str, float]:
    """Wall seconds of each flow run that started after `since`, by flow name (from the Prefect API)."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterStartTime

    seconds: dict[str, float] = {}
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(after_=since)), limit=50
        )
        names = {run.flow_id: client.read_flow(run.flow_id).name for run in runs}
        for run in runs:
            if run.start_time and run.end_time:
                seconds[names[run.flow_id]] = (run.end_time - run.start_time).total_seconds()
    return seconds


def plain_steps(home: Path) -> dict[str, float]:
    """The nightly's four steps as the plain functions the flows wrap, in a fresh GPUCOST_HOME."""
    fresh_home(home)
    from tasks import config_files
    from tasks.contract.features import refresh_feature_table
    from tasks.model.predict import load_champion
    from tasks.model.training import read_training_features, train_and_register
    from tasks.prices.ingest import ingest_price_file
    from tasks.publishing.night import publish_night
    from tasks.sources import configured_price_sources, configured_telemetry_paths
    from tasks.telemetry.ingest import ingest_telemetry_file
    from tasks.warehouse import warehouse

    seconds: dict[str, float] = {}
    now = datetime.now(UTC)
    loaded = Configured()
    resources = loaded.resources
    with timed() as t, warehouse(resources.warehouse) as con:
        aliases = loaded.load_tables(con)
        for source in configured_price_sources(config_files.sources()):
            ingest_price_file(con, source, aliases, now, **loaded.price_options())
    seconds["ingest_prices"] = t["s"]
    with timed() as t, warehouse(resources.warehouse) as con:
        aliases = loaded.load_tables(con)
        for path in configured_telemetry_paths(config_files.sources()):
            ingest_telemetry_file(con, path, aliases, now, **loaded.telemetry_options())
        refresh_feature_table(con, loaded.reference)
    seconds["ingest_telemetry"] = t["s"]
    with timed() as t:
        with warehouse(resources.warehouse) as con:
            features = read_training_features(con)
        train_and_register(features, config_files.models(), resources, loaded.contract())
    seconds["train"] = t["s"]
    with timed() as t:
        champion = load_champion(resources.tracking_uri, loaded.contract())
        with warehouse(resources.warehouse) as con:
            publish_night(con, champion, now.date(), now, resources, **loaded.night())
    seconds["publish"] = t["s"]
    return seconds


def run_nightly(home: str, prefect_home: str, fresh_prefect: bool, plain_home: str | None = None) -> dict[str, Any]:
    """Measured step: (a trivial flow to time Prefect's start-up, warm only), the nightly flow, then
    (optionally) the plain steps in the same process."""
    if fresh_prefect:
        shutil.rmtree(prefect_home, ignore_errors=True)
    os.environ["PREFECT_HOME"] = prefect_home
    os.environ["PREFECT_SERVER_EPHEMERAL_ENABLED"] = "true"
    fresh_home(Path(home))
    with timed() as imports:
        from tasks.settings import configure_prefect_environment

        configure_prefect_environment()  # before prefect is imported: it reads its settings once
        from prefect import flow

        from flows.nightly import nightly
    result: dict[str, Any] = {"import_s": imports["s"]}
    started = datetime.now(UTC)
    if not fresh_prefect:

        @flow(name="bench-noop")
        def noop() -> None:
            return None

        with timed() as t:
            noop()
        result["startup_s"] = t["s"]  # temporary API start + one empty flow run's bookkeeping
    with timed() as t:
        steps = nightly()
    result["nightly_s"] = t["s"]
    result["outcomes"] = steps
    result["flow_seconds"] = _subflow_seconds(started)
    if plain_home:
        result["plain_seconds"] = plain_steps(Path(plain_home))
    return result


def run(cfg: BenchConfig) -> list[Row]:
    work = cfg.work_dir / "nightly"
    prefect_home = str(work / "prefect")
    cold = run_step("nightly:run_nightly", home=str(work / "home-cold"), prefect_home=prefect_home, fresh_prefect=True)
    warm = run_step("nightly:run_nightly", home=str(work / "home-warm"), prefect_home=prefect_home,
                    fresh_prefect=False, plain_home=str(work / "home-plain"))
    failed = {k: v for k, v in warm["outcomes"].items() if not str(v).startswith("completed")}
    rows = [
        Row(SECTION, "nightly, first start (fresh Prefect home)", None, cold["nightly_s"], peak_mb=cold["peak_mb"],
            note=f"+ {cold['import_s']:.1f} s importing flows/prefect"),
        Row(SECTION, "nightly, after the first start (start-up + flow)", None,
            warm["startup_s"] + warm["nightly_s"], sum(warm["plain_seconds"].values()), warm["peak_mb"],
            note=f"Prefect start-up + empty flow {warm['startup_s']:.1f} s, nightly flow {warm['nightly_s']:.1f} s; "
                 f"floor = the four steps as plain functions in the same process"
                 + (f"; NOT completed: {failed}" if failed else "")),
    ]
    flow_total = warm["flow_seconds"].get("nightly")
    for step in STEPS:
        flow_s, plain_s = warm["flow_seconds"].get(step), warm["plain_seconds"][step]
        overhead = f"orchestration {flow_s - plain_s:+.1f} s" if flow_s is not None else "no flow-run record"
        rows.append(Row(SECTION, f"step {step}: subflow vs plain function", None, flow_s, plain_s,
                        note=overhead))
    if flow_total is not None:
        between = flow_total - sum(warm["flow_seconds"].get(s, 0.0) for s in STEPS)
        rows.append(Row(SECTION, "nightly flow outside its subflows (lock, artifacts, bookkeeping)", None, between))
    return rows
