"""The `gpucost` command line. Each subcommand runs a flow (or a query) and exits non-zero, with the
reason on stderr, when it fails."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import flows  # noqa: F401 - configures Prefect's state folder before Prefect is imported
from flows.guard import SUPERVISED, guarded, is_worker, preflight, run_supervised

app = typer.Typer(no_args_is_help=True, add_completion=False, help="GPU cost per token, learned from telemetry.")
ingest_app = typer.Typer(no_args_is_help=True, help="Ingest price lists or training telemetry.")
app.add_typer(ingest_app, name="ingest")

out = Console()
err = Console(stderr=True)


def fail(message: str, code: int = 1) -> None:
    # escaped: a message may hold brackets (e.g. "[[workloads]]") that rich would read as markup
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@ingest_app.command("prices")
def ingest_prices_cmd(
    paths: Annotated[list[Path] | None, typer.Argument(help="Price files. Default: all of config/sources.toml")] = None,
    provider: Annotated[str | None, typer.Option(help="Provider the files price, e.g. aws")] = None,
    format: Annotated[str | None, typer.Option("--format", help="Adapter: skypilot, aws-offer, ...")] = None,
) -> None:
    """Read price lists through their adapters into the warehouse (validated, quarantined, history kept)."""
    from flows.ingest_prices import ingest_prices
    from tasks.sources import SourceConfigError, configured_price_sources, price_sources_for
    from tasks.warehouse import WarehouseBusyError

    try:
        sources = price_sources_for(paths, provider, format) if paths else configured_price_sources()
    except SourceConfigError as error:
        fail(str(error), 2)
    try:
        with guarded(fail), _tracebacks_dropped():
            preflight("ingest")
            outcomes = ingest_prices(sources)
    except WarehouseBusyError as error:
        fail(str(error), 4)
    if outcomes and all(o.status == "quarantined" for o in outcomes):
        fail("every file was quarantined; see quarantine.rejected_files")


@ingest_app.command("telemetry")
def ingest_telemetry_cmd(
    paths: Annotated[list[str] | None, typer.Argument(
        help="CSV, JSON Lines or Parquet telemetry files; with --mlflow, MLflow experiment names")] = None,
    mlflow: Annotated[bool, typer.Option("--mlflow", help="Read finished runs of these MLflow experiments")] = False,
    tracking_uri: Annotated[str | None, typer.Option(
        help="MLflow tracking URI of the team's server (default: the [[mlflow]] source naming the experiment)")] = None,
    mapping: Annotated[str | None, typer.Option(
        help="Mapping in config/mlflow_telemetry.toml, e.g. hf_trainer, composer, lightning, torchtitan, nemo")] = None,
    rescan: Annotated[bool, typer.Option(help="With --mlflow: read every finished run, not only new ones")] = False,
) -> None:
    """Read training telemetry into the warehouse (validated, quarantined, keyed by run_id)."""
    from tasks.telemetry.mlflow_source import MlflowMappingError
    from tasks.warehouse import WarehouseBusyError

    sources = None
    if mlflow:
        try:
            sources = mlflow_sources_for(paths or [], tracking_uri, mapping)
        except MlflowMappingError as error:
            fail(str(error), 2)
    elif tracking_uri or mapping or rescan:
        fail("--tracking-uri, --mapping and --rescan go with --mlflow EXPERIMENT...", 2)
    from flows.ingest_telemetry import ingest_telemetry

    try:
        with guarded(fail), _tracebacks_dropped():
            preflight("ingest")
            outcomes = ingest_telemetry(None if mlflow else [Path(p) for p in paths or []], sources, rescan)
    except WarehouseBusyError as error:
        fail(str(error), 4)
    if outcomes and all(o.status == "quarantined" for o in outcomes):
        errors = "; ".join(sorted({o.error or "" for o in outcomes}))
        fail(f"every source was quarantined ({errors}); see quarantine.rejected_files")


def mlflow_sources_for(experiments: list[str], tracking_uri: str | None, mapping: str | None) -> list:
    """`--mlflow EXPERIMENT...`: each experiment with the tracking URI and mapping given, else those of the
    [[mlflow]] source in config/sources.toml that names it."""
    from tasks.telemetry.mlflow_ingest import configured_mlflow_sources
    from tasks.telemetry.mlflow_source import MlflowMappingError, MlflowSource, load_mapping

    if not experiments:
        raise MlflowMappingError("--mlflow needs at least one experiment name")
    configured = {e: s for s in configured_mlflow_sources() for e in s.experiments}
    sources = []
    for experiment in experiments:
        known = configured.get(experiment)
        uri = tracking_uri or (known.tracking_uri if known else None)
        name = mapping or (known.mapping if known else None)
        if uri is None or name is None:
            raise MlflowMappingError(
                f"experiment {experiment!r} is not in config/sources.toml [[mlflow]]: give --tracking-uri and --mapping"
            )
        load_mapping(name)  # an unknown mapping is reported now, in one line
        sources.append(MlflowSource(uri, (experiment,), name))
    return sources


@app.command()
def run() -> None:
    """Run the nightly pipeline once: ingest prices, ingest telemetry, train, publish."""
    from tasks.publishing.lock import RunLockedError, check_warehouse_free, run_lock
    from tasks.settings import paths
    from tasks.warehouse import WarehouseBusyError

    try:
        with guarded(fail):
            # Before Prefect (or anything heavy) is imported: another run, a session holding the warehouse, a
            # damaged store, a full disk or a bad workloads file is reported in one line, at once.
            with run_lock(paths().run_lock):
                preflight("run")
                check_warehouse_free()
            from flows.nightly import nightly

            with _tracebacks_dropped():
                nightly()
    except RunLockedError as error:
        fail(str(error), 3)
    except WarehouseBusyError as error:
        fail(str(error), 4)


@app.command()
def train() -> None:
    """Cross-validate the candidate models, register the best, promote it only if it beats the champion."""
    with guarded(fail):  # before MLflow is even imported: a damaged store or a full disk, in one line
        preflight("train")
    import sqlalchemy.exc
    from mlflow.exceptions import MlflowException

    from tasks.model.tracking import connect_tracking, tracking_uri
    from tasks.model.training import NotEnoughTelemetryError
    from tasks.warehouse import WarehouseBusyError

    uri = tracking_uri()
    store_failures = (MlflowException, sqlalchemy.exc.SQLAlchemyError, OSError)

    def store_failed(error: BaseException) -> None:
        cause = " ".join(str(error).split()) or type(error).__name__
        fail(f"training failed: the MLflow tracking store {uri} is unavailable ({type(error).__name__}: "
             f"{cause[:400]}); the champion model is unchanged")

    try:
        # before Prefect starts: an unreachable store is reported at once, in one line
        connect_tracking(uri)
    except store_failures as error:
        store_failed(error)
    from flows.train import train as train_flow

    try:
        with guarded(fail), _tracebacks_dropped():
            train_flow()
    except (NotEnoughTelemetryError, WarehouseBusyError) as error:
        fail(str(error))
    except store_failures as error:  # e.g. the store locked by another writer past its busy timeout
        store_failed(error)


class _DropTraceback:
    """Logging filter: keep a failed run's log line, drop its traceback (the command's last line says why)."""

    def filter(self, record: object) -> bool:
        record.exc_info = None  # type: ignore[attr-defined]
        record.exc_text = None  # type: ignore[attr-defined]
        return True


class _tracebacks_dropped:
    """While a flow runs from the CLI, Prefect's task and flow loggers print no tracebacks."""

    names = ("prefect.task_runs", "prefect.flow_runs", "prefect.engine")

    def __enter__(self) -> None:
        import logging

        self.filter = _DropTraceback()
        for name in self.names:
            logging.getLogger(name).addFilter(self.filter)

    def __exit__(self, *exc: object) -> None:
        import logging

        for name in self.names:
            logging.getLogger(name).removeFilter(self.filter)


@app.command()
def publish() -> None:
    """Rank every offer for every workload and publish the database users query."""
    from flows.publish import publish as publish_flow
    from tasks.warehouse import WarehouseBusyError

    try:
        with guarded(fail), _tracebacks_dropped():
            preflight("publish")
            outcome = publish_flow()
    except WarehouseBusyError as error:
        fail(str(error))
    out.print(f"published {outcome.published.path} ({outcome.ranking.ranked} ranked offers)", highlight=False)


@app.command()
def predict(
    input: Annotated[Path, typer.Argument(help="CSV or Parquet rows in the telemetry contract")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write (CSV or Parquet)")],
) -> None:
    """Predict tokens/s per GPU (with an interval) with the champion model."""
    from tasks.model.predict import NoChampionError, predict_file

    try:
        result = predict_file(input, output)
    except (NoChampionError, FileNotFoundError, ValueError) as error:
        fail(str(error))
    unscored = result.filter(result["unscored_reason"].is_not_null()).height
    out.print(f"{result.height - unscored} row(s) predicted, {unscored} unscored (see unscored_reason) -> {output}")


@app.command()
def serve() -> None:
    """Start what the nightly schedule needs on this machine (local Prefect server and a runner)."""
    from flows.serve import serve as serve_all

    with guarded(fail):
        preflight("serve")
        serve_all()


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL to run (read-only)")],
    warehouse: Annotated[bool, typer.Option("--warehouse", help="Query the working warehouse")] = False,
    csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table")] = False,
) -> None:
    """Query the published database (or, with --warehouse, the working one), read-only."""
    import duckdb

    from tasks.preflight import duckdb_problem
    from tasks.settings import paths
    from tasks.warehouse import SANDBOXED, WarehouseBusyError, connect

    target = paths().warehouse if warehouse else paths().published
    try:
        damaged = duckdb_problem(target, "warehouse" if warehouse else "published")
        if damaged is not None:
            fail(damaged.message, damaged.exit_code)
        # read-only, no file or network access beyond this database, settings locked, no extensions loaded
        con = connect(target, read_only=True, config=SANDBOXED)
    except (FileNotFoundError, WarehouseBusyError) as error:
        fail(str(error))
    try:
        relation = con.sql(query)
        if relation is None:
            return
        columns = relation.columns
        rows = relation.fetchall()
    except duckdb.Error as error:
        fail(f"{type(error).__name__}: {error}")
    finally:
        con.close()
    if csv:
        import csv as csv_module

        writer = csv_module.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
        return
    table = Table(*columns, show_lines=False)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    # Piped or redirected output gets the table at its natural width instead of truncated cells.
    (out if out.is_terminal else Console(width=100_000)).print(table)
    out.print(f"{len(rows)} row(s)", style="dim")


@app.command()
def fetch(
    provider: Annotated[
        list[str] | None,
        typer.Option("--provider", "-p", help="azure, aws, aws-spot, gcp, skypilot (repeat for several)"),
    ] = None,
) -> None:
    """Download current price lists from the providers' APIs into $GPUCOST_HOME/downloads/, then ingest them."""
    from tasks.fetch.config import FetchConfigError, check_providers, load_fetch_config
    from tasks.publishing.lock import check_warehouse_free
    from tasks.warehouse import WarehouseBusyError

    try:
        # before Prefect starts: a wrong provider name or config, or a busy warehouse, is one line at once
        names = check_providers(list(provider or load_fetch_config().providers))
        check_warehouse_free()
    except FetchConfigError as error:
        fail(str(error), 2)
    except WarehouseBusyError as error:
        fail(str(error), 4)
    from flows.fetch_prices import fetch_prices

    try:
        report = fetch_prices(names)
    except WarehouseBusyError as error:
        fail(str(error), 4)
    for result in report.results:
        if result.status == "skipped":
            err.print(f"{result.name}: skipped: {result.detail}", highlight=False, soft_wrap=True)
    failed = report.failed()
    if failed:
        fail("fetch " + "; ".join(f"{r.name} {r.status}: {r.detail}" for r in failed)
             + " (the other providers were ingested; the last good prices are kept)")


def main() -> None:
    """The `gpucost` entry point: long-running commands run under a supervisor (flows/guard.py) that stops
    their whole process group, Prefect's server included, on SIGTERM/SIGINT."""
    argv = sys.argv[1:]
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in SUPERVISED and not is_worker():
        sys.exit(run_supervised(argv))
    if is_worker():
        from tasks.interrupts import install_worker_handlers

        install_worker_handlers()
    app()


if __name__ == "__main__":
    main()
