"""The `gpucost` command line. Each subcommand runs a flow (or a query) and exits non-zero, with the
reason on stderr, when it fails."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar, cast

import typer
from rich.console import Console
from rich.markup import escape

from gpucost.commands import COMMANDS, PROBLEM_EXITS, Exit
from gpucost.console import configure_cli_output, quiet_prefect_environment
from gpucost.guard import guarded, is_worker, min_free_mb, preflight, run_supervised, said_in_one_line
from gpucost.preflight import disk_full_message, duckdb_problem, environment_problem
from gpucost.present import (
    narrow_console,
    out,
    print_offers,
    print_result_table,
    print_totals,
    print_workloads,
    print_wrapped,
    wrapped,
)
from gpucost.serve import ServeError
from gpucost.serve import serve as serve_all
from gpucost.sql_bounds import (
    INTERRUPTED_MESSAGE,
    QueryTimeout,
    ResultTooLarge,
    SqlBounds,
    fetch_table,
    is_interrupt,
    write_csv,
)
from tasks import config_files
from tasks.config import memory_limit_problem
from tasks.config_files import MAX_ROWS, MAX_TIMEOUT_SECONDS, check_all
from tasks.display import printable
from tasks.extras import MissingExtraError, check_command, require
from tasks.fetch.config import check_providers, load_fetch_config
from tasks.ingest.registry import IngestAborted, LandingNotWritable, find_aborted, irregular_file
from tasks.processes import RunLockedError, install_worker_handlers, run_lock
from tasks.ranking.offers import OfferFilter, find_offers, open_published, published_workloads
from tasks.ranking.workloads import WorkloadConfigError, load_workloads
from tasks.settings import ConfigError, Environment, Resources, configure_prefect_environment
from tasks.sources import SourceConfigError, configured_price_sources, price_sources_for
from tasks.stores import disk_full_file, sqlite_path
from tasks.warehouse import SANDBOXED, WarehouseBusyError, check_warehouse_free, connect

if TYPE_CHECKING:
    import click

    from tasks.model.report import TrainingOutcome  # start-up time: it loads matplotlib and the model code
    from tasks.telemetry.mlflow_source import MlflowSource  # start-up time: it loads MLflow

app = typer.Typer(no_args_is_help=True, add_completion=False, help="GPU cost per token, learned from telemetry.")
ingest_app = typer.Typer(no_args_is_help=True, help="Ingest price lists or training telemetry.")
app.add_typer(ingest_app, name="ingest")

err = Console(stderr=True)
T = TypeVar("T")

@app.callback()
def _before_command(ctx: typer.Context) -> None:
    command = COMMANDS.get(ctx.invoked_subcommand or "")
    if command is not None and command.runs_flows:

        quiet_prefect_environment()


def flow_output() -> None:
    """After a flow module (so Prefect) is imported: progress lines, one-line warnings, no escape codes."""

    configure_cli_output()


def fail(message: str, code: int = Exit.FAILED) -> NoReturn:
    # escaped: a message may hold brackets (e.g. "[[workloads]]") that rich would read as markup, and names from
    # data or paths with control characters (a newline would print a second, fake line): shown, never obeyed

    err.print(f"[bold red]error:[/] {escape(printable(message))}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def check_readable(paths: list[Path] | None) -> None:
    """A missing or unreadable input is said as such, before any flow (or Prefect server) starts (exit 2)."""
    import os


    for path in paths or []:
        try:
            path.stat()
        except FileNotFoundError:
            fail(f"{path}: no such file or directory", Exit.INPUT)
        except OSError as error:  # e.g. a name too long for the file system
            fail(f"{path}: {error.strerror or error}", Exit.INPUT)
        if not os.access(path, os.R_OK) or (path.is_dir() and not os.access(path, os.X_OK)):
            fail(f"{path}: permission denied (not readable)", Exit.INPUT)
        if not path.is_dir() and (irregular := irregular_file(path)) is not None:
            fail(irregular, Exit.INPUT)  # a FIFO or a device would be read forever


def check_output_name(path: Path) -> None:
    """An output the file system cannot name (e.g. a name past 255 bytes) is said before any work (exit 2)."""
    try:
        path.stat()
    except FileNotFoundError:  # not written yet (its folder is made when the output is written)
        return
    except OSError as error:
        fail(f"{path}: {error.strerror or error}", Exit.INPUT)


def resources() -> Resources:
    """Where this command's state lives (the environment now, the configured reference folder): built once per
    command and passed down; a bad settings.toml is one line, exit 2."""
    try:
        return config_files.resources()
    except ConfigError as error:
        fail(str(error), Exit.INPUT)


def check_warehouse_not_busy(warehouse: Path, code: int = Exit.BUSY) -> None:
    """Another process holding the warehouse is reported in one line, before any flow starts."""

    try:
        check_warehouse_free(warehouse)
    except WarehouseBusyError as error:
        fail(str(error), code)


@ingest_app.command("prices")
def ingest_prices_cmd(
    paths: Annotated[list[Path] | None, typer.Argument(help="Price files. Default: all of config/sources.toml")] = None,
    provider: Annotated[str | None, typer.Option(help="Provider the files price, e.g. aws")] = None,
    format: Annotated[str | None, typer.Option("--format", help="Adapter: skypilot, aws-offer, ...")] = None,
) -> None:
    """Read price lists through their adapters into the warehouse (validated, quarantined, history kept)."""

    check_readable(paths)
    try:
        configured = config_files.sources()
        sources = (price_sources_for(paths, provider, format, configured) if paths
                   else configured_price_sources(configured))
    except SourceConfigError as error:
        fail(str(error), Exit.INPUT)
    state = resources()
    check_warehouse_not_busy(state.warehouse)
    from flows.ingest_prices import ingest_prices  # start-up time: Prefect loads only for the flow

    outcomes = run_flow(state, lambda: ingest_prices(sources), preflight_for="ingest")
    if outcomes and all(o.status == "quarantined" for o in outcomes):
        fail("every file was quarantined; see quarantine.rejected_files")
    print_totals(outcomes)


@ingest_app.command("telemetry")
def ingest_telemetry_cmd(
    paths: Annotated[list[str] | None, typer.Argument(
        help="CSV, JSON Lines or Parquet telemetry files; with --mlflow, MLflow experiment names")] = None,
    mlflow: Annotated[bool, typer.Option("--mlflow", help="Read finished runs of these MLflow experiments")] = False,
    tracking_uri: Annotated[str | None, typer.Option(
        help="MLflow tracking URI of the team's server (default: the \\[\\[mlflow]] source naming the "
             "experiment)")] = None,
    mapping: Annotated[str | None, typer.Option(
        help="Mapping in config/mlflow_telemetry.toml, e.g. hf_trainer, composer, lightning, torchtitan, nemo")] = None,
    rescan: Annotated[bool, typer.Option(help="With --mlflow: read every finished run, not only new ones")] = False,
) -> None:
    """Read training telemetry into the warehouse (validated, quarantined, keyed by run_id)."""
    sources = None
    if mlflow:
        sources = mlflow_sources_for(paths or [], tracking_uri, mapping)
    elif tracking_uri or mapping or rescan:
        fail("--tracking-uri, --mapping and --rescan go with --mlflow EXPERIMENT...", Exit.INPUT)
    else:
        check_readable([Path(p) for p in paths or []])
    state = resources()
    check_warehouse_not_busy(state.warehouse)
    from flows.ingest_telemetry import ingest_telemetry  # start-up time: Prefect loads only for the flow

    files = None if mlflow else [Path(p) for p in paths or []]
    outcomes = run_flow(state, lambda: ingest_telemetry(files, sources, rescan), preflight_for="ingest")
    if outcomes and all(o.status == "quarantined" for o in outcomes):
        errors = "; ".join(sorted({o.error or "" for o in outcomes}))
        fail(f"every source was quarantined ({errors}); see quarantine.rejected_files")
    print_totals(outcomes)


def mlflow_sources_for(
    experiments: list[str], tracking_uri: str | None, mapping: str | None,
) -> list[MlflowSource]:
    """`--mlflow EXPERIMENT...`: each experiment with the tracking URI and mapping given, else those of the
    [[mlflow]] source in config/sources.toml that names it; one that cannot be read ends the command (exit 2)."""
    from tasks.telemetry import mlflow_ingest, mlflow_source  # start-up time: they load MLflow

    if not experiments:
        fail("--mlflow needs at least one experiment name", Exit.INPUT)
    configured = {e: s for s in mlflow_ingest.configured_mlflow_sources(config_files.sources()) for e in s.experiments}
    sources = []
    for experiment in experiments:
        known = configured.get(experiment)
        uri = tracking_uri or (known.tracking_uri if known else None)
        name = mapping or (known.mapping if known else None)
        if uri is None or name is None:
            fail(f"experiment {experiment!r} is not in config/sources.toml [[mlflow]]: give --tracking-uri and "
                 "--mapping", Exit.INPUT)
        try:
            mlflow_source.load_mapping(name, config_files.mlflow_telemetry())  # an unknown mapping: one line now
        except mlflow_source.MlflowMappingError as error:
            fail(str(error), Exit.INPUT)
        sources.append(mlflow_source.MlflowSource(uri, (experiment,), name))
    return sources


@app.command()
def run() -> None:
    """Run the nightly pipeline once: ingest prices, ingest telemetry, train, publish."""

    state = resources()
    try:
        # Before Prefect (or anything heavy) is imported: another run, a session holding the warehouse, a damaged
        # store, a full disk or a bad workloads file is reported in one line, at once.
        with guarded(fail, state.home), run_lock(state.run_lock):
            preflight("run", state)
            check_warehouse_free(state.warehouse)
        from flows.nightly import nightly  # start-up time: Prefect loads only once the checks passed

        steps = run_flow(state, nightly)
    except RunLockedError as error:  # another run took the lock between the check and the night
        fail(str(error), Exit.LOCKED)
    _print_night(steps, state.published)


def _print_night(steps: dict[str, str], published: Path) -> None:
    """What ran, then tonight's cheapest offer per workload with its trust mark (fits 100 columns)."""

    console = narrow_console()
    for name, outcome in steps.items():
        console.print(wrapped(f"{name}: {outcome}"), highlight=False)
    try:
        con = open_published(published)
    except FileNotFoundError:
        return
    try:
        best = find_offers(con, OfferFilter(limit=1))
    finally:
        con.close()
    if not best.is_empty():
        console.print()
        print_offers(best, "cost")
        console.print("more: gpucost offers --workload NAME [--gpu H100 --spot --max-hours 500 ...]",
                      highlight=False)


@app.command()
def train() -> None:
    """Cross-validate the candidate models, register the best, promote it only if it beats the champion."""
    state = resources()
    with guarded(fail, state.home):  # before MLflow is even imported: a damaged store or a full disk, in one line
        preflight("train", state)
    import sqlalchemy.exc
    from mlflow.exceptions import MlflowException

    from tasks.model import tracking, training  # start-up time: they load MLflow and scikit-learn

    check_warehouse_not_busy(state.warehouse)

    uri = state.tracking_uri
    store_failures = (MlflowException, sqlalchemy.exc.SQLAlchemyError, OSError)

    def store_failed(error: BaseException) -> NoReturn:
        full = disk_full_file(error)
        if full is not None:  # the store's own file when the error names none (SQLite's "database or disk is full")
            fail(disk_full_message(full or str(sqlite_path(uri) or uri), state.home, min_free_mb()), Exit.DISK_FULL)
        cause = " ".join(str(error).split()) or type(error).__name__
        fail(f"training failed: the MLflow tracking store {uri} is unavailable ({type(error).__name__}: "
             f"{cause[:400]}); the champion model is unchanged")

    try:
        # before Prefect starts: an unreachable store is reported at once, in one line
        tracking.connect_tracking(uri, state.home)
    except store_failures as error:
        store_failed(error)
    from flows.train import train as train_flow  # start-up time: Prefect loads only for the flow

    def trained() -> TrainingOutcome:
        try:
            return train_flow()
        except store_failures as error:  # e.g. the store locked by another writer past its busy timeout
            store_failed(error)

    try:
        outcome = run_flow(state, trained)
    except training.NotEnoughTelemetryError as error:
        fail(str(error))
    print_wrapped(outcome.summary_line())


# Failures the command's own last line says (gpucost/guard.py): Prefect's ERROR records of them are dropped, not
# said before it a second time (by their type's name in Prefect's "Finished in state Failed(…)" text).
SAID_BY_THE_COMMAND = (IngestAborted, LandingNotWritable)


class _HeldLines:
    """Logging filter: lines at `level` or above are held back (the command's own one line may say them already);
    `replay` prints what is still held."""

    def __init__(self, level: int) -> None:
        self.level = level
        self.held: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= self.level:
            self.held.append(record)
            return False
        return True

    def replay(self) -> None:
        """Print the held lines (once the filter is off their loggers)."""
        for record in self.held:
            logging.getLogger(record.name).handle(record)
        self.held.clear()


class _DropTraceback(_HeldLines):
    """Keep a failed run's log line, drop its traceback (the command's last line says why); ERROR lines are held
    (`_tracebacks_dropped`); the records of a failure the command says in its one line (SAID_BY_THE_COMMAND) are
    dropped."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if (error is not None and find_aborted(error) is not None) or any(
                kind.__name__ in record.getMessage() for kind in SAID_BY_THE_COMMAND):
            return False
        record.exc_info = None
        record.exc_text = None
        return super().filter(record)


class _tracebacks_dropped:
    """While a flow runs from the CLI, Prefect's task and flow loggers print no tracebacks, and Prefect's API
    failing to start or answer is one line (exit 1), not a traceback. Their ERROR lines are held until the flow
    ends: a failure the command says in one line (gpucost.guard.said_in_one_line) drops them, so that line is
    the only one; anything else (a step that failed in a night that went on) prints them then."""

    names = ("prefect.task_runs", "prefect.flow_runs", "prefect.engine", "mlflow.store.db.utils")

    def __init__(self, state: Resources) -> None:
        self.prefect_home = state.prefect_home

    def __enter__(self) -> None:
        self.filter = _DropTraceback()
        for name in self.names:
            logging.getLogger(name).addFilter(self.filter)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        for name in self.names:
            logging.getLogger(name).removeFilter(self.filter)
        prefect_down = isinstance(error, RuntimeError) and "Prefect API" in str(error)
        if not (prefect_down or (error is not None and said_in_one_line(error))):
            self.filter.replay()
        if prefect_down:

            fail(f"the Prefect API is unavailable ({' '.join(str(error).split())}); state in "
                 f"{self.prefect_home}; PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS gives it longer")


def run_flow(state: Resources, flow: Callable[[], T], preflight_for: str | None = None) -> T:
    """Every flow command's run, once its flow module is imported: the CLI's output, then the pre-flight of
    `preflight_for` (when the command has not run it already) and the flow, each failure said in one line with its
    exit code (a warehouse taken between the command's check and the flow: exit 4, by `guarded`)."""
    flow_output()
    with guarded(fail, state.home), _tracebacks_dropped(state):
        if preflight_for is not None:
            preflight(preflight_for, state)
        return flow()


@app.command()
def publish() -> None:
    """Rank every offer for every workload and publish the database users query."""
    state = resources()
    check_warehouse_not_busy(state.warehouse)
    from flows.publish import publish as publish_flow  # start-up time: Prefect loads only for the flow

    outcome = run_flow(state, publish_flow, preflight_for="publish")
    out.print(f"published {outcome.published.path} ({outcome.ranking.ranked} ranked offers)", highlight=False)


@app.command()
def predict(
    input: Annotated[Path, typer.Argument(help="CSV, JSON Lines or Parquet rows in the telemetry contract")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write (CSV or Parquet)")],
) -> None:
    """Predict tokens/s per GPU (with an interval) with the champion model."""
    check_readable([input])
    check_output_name(output)

    configure_cli_output()
    state = resources()
    from tasks.model.predict import NoChampionError, PredictInputError, predict_file  # start-up time: MLflow

    failure: tuple[str, int] | None = None
    warnings = _HeldLines(logging.WARNING)  # printed before the command's last line, unless that line says them
    logging.getLogger("gpucost.predict").addFilter(warnings)
    try:
        result = predict_file(input, output, state.tracking_uri, config_files.telemetry(),
                              config_files.settings().reference)
    except PredictInputError as error:
        failure = str(error), Exit.INPUT
    except NoChampionError as error:
        read_only = champion_on_read_only_home(state)
        if read_only is not None:  # the warning named the file MLflow could not write: this line says why
            warnings.held.clear()
        failure = read_only or str(error), Exit.FAILED
    except (FileNotFoundError, ValueError) as error:
        failure = str(error), Exit.FAILED
    finally:
        logging.getLogger("gpucost.predict").removeFilter(warnings)
        warnings.replay()
    if failure is not None:
        fail(*failure)
    reasons = result["unscored_reason"].drop_nulls()
    if result.height and reasons.len() == result.height:
        fail(f"none of the {result.height} row(s) of {input} could be scored (first reason: {reasons[0]}); "
             f"see unscored_reason in {output}")
    out.print(f"{result.height - reasons.len()} row(s) predicted, {reasons.len()} unscored "
              f"(see unscored_reason) -> {output}", highlight=False, soft_wrap=True)


def champion_on_read_only_home(state: Resources) -> str | None:
    """Why a champion the registry holds could not be loaded, when the cause is the machine's: a local store's
    artifacts folder that cannot be written (MLflow writes `registered_model_meta` into a local model's folder each
    time it loads it). None when that is not the cause: the command says there is no champion."""
    import os

    artifacts = state.mlflow_artifacts
    if not artifacts.is_dir() or os.access(artifacts, os.W_OK):  # a read-only mount is refused even to root
        return None
    from tasks.model.tracking import CHAMPION, REGISTERED_MODEL, connect_tracking, version_by_alias

    try:
        champion = version_by_alias(connect_tracking(state.tracking_uri, create_experiment=False).client, CHAMPION)
    except Exception:  # an unreadable registry: "no champion" says it as well as anything here could
        return None
    if champion is None:
        return None
    return (f"the champion (v{champion.version} of {REGISTERED_MODEL} in {state.tracking_uri}) cannot be loaded: "
            f"{artifacts} is read-only, and MLflow writes a file (registered_model_meta) into a local model's "
            f"folder each time it loads it; run gpucost predict with GPUCOST_HOME on a writable copy of {state.home}")


class SortBy(StrEnum):
    cost = "cost"
    time = "time"
    co2 = "co2"


@app.command()
def offers(
    workload: Annotated[str | None, typer.Option(help="Only this workload (see `gpucost workloads`)")] = None,
    gpu: Annotated[str | None, typer.Option(help="GPU name or part of it, e.g. H100")] = None,
    provider: Annotated[str | None, typer.Option(help="e.g. aws, gcp, azure, lambda")] = None,
    region: Annotated[str | None, typer.Option(help="e.g. us-east-1")] = None,
    spot: Annotated[bool | None, typer.Option("--spot/--on-demand", help="Only spot, or only on-demand")] = None,
    max_hours: Annotated[float | None, typer.Option(help="Finish within this many hours (expected)")] = None,
    max_usd: Annotated[float | None, typer.Option(help="Cost at most this many USD in total (expected)")] = None,
    max_co2_kg: Annotated[float | None, typer.Option(help="Emit at most this many kg CO2e (operational)")] = None,
    limit: Annotated[int, typer.Option(min=1, help="Offers per workload")] = 10,
    sort: Annotated[SortBy, typer.Option(
        help="Rank by cost (each offer's cheapest cluster), time to finish (its fastest) or CO2 (kg CO2e of its "
             "cheapest)")] = SortBy.cost,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV for scripts")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON for scripts")] = False,
) -> None:
    """Tonight's cheapest (or fastest) offers per workload, with the interval and the telemetry behind each."""
    import duckdb


    if as_csv and as_json:
        fail("give --csv or --json, not both", Exit.INPUT)
    require_positive({"--max-hours": max_hours, "--max-usd": max_usd, "--max-co2-kg": max_co2_kg})
    wanted = OfferFilter(workload=workload, gpu=gpu, provider=provider, region=region,
                         pricing=None if spot is None else ("spot" if spot else "on_demand"),
                         max_hours=max_hours, max_usd=max_usd, max_co2_kg=max_co2_kg, limit=limit,
                         sort_by=sort.value)
    published = resources().published
    try:
        con = open_published(published)
    except FileNotFoundError as error:
        fail(str(error))
    except duckdb.Error as error:
        fail(f"cannot read {published}: {' '.join(str(error).split())}")
    try:
        known = published_workloads(con)
        if workload is not None and workload not in known:
            fail(f"no workload {workload!r} in the published ranking (workloads: {', '.join(known)})", Exit.INPUT)
        found = find_offers(con, wanted)
    finally:
        con.close()
    if as_csv:
        sys.stdout.write(found.write_csv())
        return
    if as_json:
        sys.stdout.write(found.write_json() + "\n")
        return
    if found.is_empty():
        err.print("no ranked offer matches these filters", highlight=False)
        raise typer.Exit(Exit.FAILED)
    print_offers(found, sort.value)


def require_positive(options: dict[str, float | None]) -> None:
    """Each option given is a finite number above 0 (`nan`, `inf` and 0 would filter silently): else exit 2."""
    import math

    for name, value in options.items():
        if value is not None and not (math.isfinite(value) and value > 0):
            fail(f"{name} {value}: give a number above 0", Exit.INPUT)


@app.command()
def report() -> None:
    """Write tonight's offers as a self-contained page, $GPUCOST_HOME/report/index.html, from the published database."""
    import duckdb

    from tasks.report.page import report_path, write_report  # start-up time: Jinja2 loads only here

    state = resources()
    try:
        configured = load_workloads(config_files.workloads(), config_files.ranking())
    except (WorkloadConfigError, FileNotFoundError):
        configured = None  # the page then shows what the ranking stored of each workload
    try:
        written = write_report(state.published, report_path(state.home), configured)
    except FileNotFoundError as error:
        fail(str(error))
    except (duckdb.Error, OSError) as error:
        fail(f"cannot write the report from {state.published}: {' '.join(str(error).split())}")
    out.print(f"wrote {written.path} ({written.size_bytes / 1e6:.1f} MB in {written.seconds:.1f} s)", highlight=False)


@app.command()
def workloads() -> None:
    """The workloads the nightly ranking prices (config/workloads.toml)."""

    try:
        frame = load_workloads(config_files.workloads(), config_files.ranking())
    except (WorkloadConfigError, FileNotFoundError) as error:
        fail(str(error), Exit.INPUT)
    print_workloads(frame)


@app.command()
def serve() -> None:
    """Start what the nightly schedule needs on this machine: a local Prefect server, `prefect deploy` of
    prefect.yaml and a worker."""

    state = resources()
    try:
        with guarded(fail, state.home):
            preflight("serve", state)
            serve_all(state)
    except ServeError as error:
        fail(str(error))


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL to run (read-only)")],
    warehouse: Annotated[bool, typer.Option("--warehouse", help="Query the working warehouse")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="Print CSV (every row, whole values) instead of a table")] = False,
    timeout: Annotated[float | None, typer.Option(
        help="Stop the query after this many seconds (0: no limit; default config/settings.toml [sql])")] = None,
    memory_limit: Annotated[str | None, typer.Option(help="DuckDB's memory cap for the query, e.g. 4GB")] = None,
    max_rows: Annotated[int | None, typer.Option(help="Rows the table view shows (0: all)")] = None,
) -> None:
    """Query the published database (or, with --warehouse, the working one), read-only and bounded."""
    import duckdb


    bounds, memory = sql_bounds(timeout, memory_limit, max_rows)
    state = resources()
    target = state.warehouse if warehouse else state.published
    try:
        damaged = duckdb_problem(target, "warehouse" if warehouse else "published", state.home)
        if damaged is not None:
            fail(damaged.message, PROBLEM_EXITS[damaged.kind])
        # read-only, no file or network access beyond this database, settings locked, no extensions loaded
        con = connect(target, read_only=True, config={**SANDBOXED, "memory_limit": memory})
    except FileNotFoundError as error:
        fail(str(error))
    except WarehouseBusyError as error:  # e.g. an ingest writing the warehouse (README: exit 4)
        fail(str(error), Exit.BUSY)
    except KeyboardInterrupt:  # Ctrl-C while the database opens
        fail(INTERRUPTED_MESSAGE, Exit.SIGINT)
    try:
        if csv:
            write_csv(con, query, bounds, sys.stdout)
            return
        result = fetch_table(con, query, bounds)
    except (QueryTimeout, ResultTooLarge) as error:
        fail(str(error))
    except (KeyboardInterrupt, duckdb.InterruptException, RuntimeError) as error:
        if not is_interrupt(error):
            raise
        fail(INTERRUPTED_MESSAGE, Exit.SIGINT)
    except duckdb.Error as error:
        fail(f"{type(error).__name__}: {error}")
    finally:
        con.close()
    if result is not None:
        print_result_table(result, bounds.max_cell_chars)


def sql_bounds(timeout: float | None, memory_limit: str | None, max_rows: int | None) -> tuple[SqlBounds, str | None]:
    """config/settings.toml [sql] with the flags given over it (exit 2, one line, for a bad value)."""
    import math


    try:
        settings = config_files.settings().sql
    except ConfigError as error:
        fail(str(error), Exit.INPUT)
    if timeout is not None and not (math.isfinite(timeout) and 0 <= timeout <= MAX_TIMEOUT_SECONDS):
        fail(f"--timeout {timeout:g}: give a number of seconds from 0 to {MAX_TIMEOUT_SECONDS:,} (0: no limit)",
             Exit.INPUT)
    if max_rows is not None and not 0 <= max_rows <= MAX_ROWS:
        fail(f"--max-rows {max_rows}: give 0 to {MAX_ROWS:,} (0: every row)", Exit.INPUT)
    if memory_limit is not None and (problem := memory_limit_problem(memory_limit)) is not None:
        fail(f"--memory-limit: {problem}", Exit.INPUT)
    bounds = SqlBounds(timeout_seconds=settings.timeout_seconds if timeout is None else timeout,
                       max_rows=settings.max_rows if max_rows is None else max_rows,
                       max_cell_chars=settings.max_cell_chars, max_result_mb=settings.max_result_mb)
    return bounds, memory_limit or settings.memory_limit


@app.command()
def fetch(
    provider: Annotated[
        list[str] | None,
        typer.Option("--provider", "-p", help="azure, aws, aws-spot, gcp, lambda, skypilot (repeat for several)"),
    ] = None,
) -> None:
    """Download current price lists from the providers' APIs into $GPUCOST_HOME/downloads/, then ingest them."""

    try:
        # before Prefect starts: a wrong provider name or config, or a busy warehouse, is one line at once
        names = check_providers(list(provider or load_fetch_config().providers))
        check_warehouse_free(config_files.resources().warehouse)
    except ConfigError as error:  # FetchConfigError too; a missing fetch.toml
        fail(str(error), Exit.INPUT)
    except WarehouseBusyError as error:
        fail(str(error), Exit.BUSY)
    from flows.fetch_prices import fetch_prices  # start-up time: Prefect loads only for the flow

    try:
        report = fetch_prices(names)
    except WarehouseBusyError as error:
        fail(str(error), Exit.BUSY)
    for result in report.results:
        if result.status == "skipped":
            err.print(f"{result.name}: skipped: {result.detail}", highlight=False, soft_wrap=True)
    failed = report.failed()
    if failed:
        fail("fetch " + "; ".join(f"{r.name} {r.status}: {r.detail}" for r in failed)
             + " (the other providers were ingested; the last good prices are kept)",
             Exit.DISK_FULL if any(r.disk_full for r in failed) else Exit.FAILED)


@dataclass(frozen=True)
class Parsed:
    """A command line as the Typer app reads it, before anything runs."""

    command: str | None                      # the command it names (COMMANDS' key), None for none or an unknown one
    options: dict[str, Any] = field(default_factory=dict)  # the command's parameters as parsed
    help: bool = False                       # --help is asked for: the command only prints its help


def parse(argv: list[str]) -> Parsed:
    """`argv` read by the app's own definition (resilient: no help printed, a bad option or value left for the
    command's own run to report), so the checks before it starts see what the command will."""
    group = cast("click.Group", typer.main.get_command(app))  # an app of several commands: typer builds a Group
    with group.make_context("gpucost", list(argv), resilient_parsing=True) as context:
        if not argv or argv[0].startswith("-"):  # `gpucost`, `gpucost --help`: no command
            return Parsed(None, help=bool(set(argv) & set(context.help_option_names)))
        name, command, rest = group.resolve_command(context, list(argv))
        if command is None or name not in COMMANDS:
            return Parsed(None)
        with command.make_context(name, list(rest), parent=context, resilient_parsing=True) as sub:
            words = rest[:rest.index("--")] if "--" in rest else rest  # after `--`, a --help is a value
            return Parsed(name, dict(sub.params), help=bool(set(words) & set(context.help_option_names)))


def check_config(parsed: Parsed) -> None:
    """A wrong config file or environment override is one line naming the file (or variable) and the key,
    exit 2, before any flow, Prefect server or supervisor starts."""
    spec = COMMANDS.get(parsed.command or "")
    if spec is None or parsed.help:
        return

    try:
        # the overrides first: a config folder that is not there, a read-only home
        problem = environment_problem(writes_home=spec.writes_home)
        if problem is not None:
            raise ConfigError(problem)
        if spec.checks_config:
            check_all()
    except ConfigError as error:
        try:
            fail(str(error), Exit.INPUT)
        except typer.Exit as stop:
            sys.exit(stop.exit_code)


def requested_providers(argv: list[str]) -> list[str]:
    """The providers `gpucost fetch` was given by name (--provider NAME, -p NAME, --provider=NAME)."""
    parsed = parse(argv)
    return list(parsed.options.get("provider") or []) if parsed.command == "fetch" else []


def check_extras(parsed: Parsed, configured: bool) -> None:
    """A feature asked for whose pip extra is not installed (tasks/extras.py): one line naming the extra, exit 2,
    before anything starts. First what the command line asks for (before any config is read), then, once the
    config is `configured` (checked), what it asks for."""
    command, spec = parsed.command, COMMANDS.get(parsed.command or "")
    if spec is None or not spec.checks_config or parsed.help:
        return

    try:
        if not configured and command == "fetch" and "aws-spot" in (parsed.options.get("provider") or []):
            require("aws", "the aws-spot price fetch")  # in the configured list it is skipped instead
        if configured:

            check_command(command, config_files.settings().ingest.runner.kind,
                          Environment.current().mlflow_tracking_uri)
    except MissingExtraError as error:
        try:
            fail(str(error), Exit.INPUT)
        except typer.Exit as stop:
            sys.exit(stop.exit_code)


def main() -> None:
    """The `gpucost` entry point: long-running commands run under a supervisor (gpucost/guard.py) that stops
    their whole process group, Prefect's server included, on SIGTERM/SIGINT."""
    argv = sys.argv[1:]
    parsed = parse(argv)
    # Prefect reads its settings once, when it is imported: first. Its folder only for a command that may run a flow
    configure_prefect_environment(
        create_home=parsed.command is not None and COMMANDS[parsed.command].writes_home and not parsed.help)
    if not is_worker():  # the supervised worker was checked by its parent
        check_extras(parsed, configured=False)
        check_config(parsed)
        check_extras(parsed, configured=True)
    if parsed.command is not None and COMMANDS[parsed.command].supervised and not is_worker():
        sys.exit(run_supervised(argv))
    if is_worker():

        install_worker_handlers()
    app(prog_name="gpucost")  # a supervised worker runs as `python -m gpucost.cli`: its help and errors say gpucost


if __name__ == "__main__":
    main()
