"""Session fixtures for the scale-out tests: a real PostgreSQL cluster and a real `mlflow server` on it
(one of each per test session), each on a free loopback port, stopped by finalisers whatever happens."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.model.conftest import baseline_config_dir, small_config_dir, training_features  # noqa: F401
from tests.scale.processes import free_port, http_ok, start_group, stop_group, stop_servers_on_sigterm, wait_until

SERVER_START_TIMEOUT_S = 240  # an MLflow or Prefect server imports for ~10-60 s on 2 busy cores


def find_pg_ctl() -> Path | None:
    """`pg_ctl` on PATH, else Debian's /usr/lib/postgresql/<version>/bin (not on PATH by default)."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    return Path(candidates[-1]) if candidates else None


def pg_ctl_as_server_user(pg_ctl: Path, workdir: Path) -> Path:
    """PostgreSQL refuses to run as root (CI and these machines run as root): then run pg_ctl, and so initdb
    and the server it starts, as the `postgres` user that Debian's package creates, in a folder it owns."""
    if os.geteuid() != 0:
        return pg_ctl
    shutil.chown(workdir, user="postgres", group="postgres")
    wrapper = workdir / "pg_ctl-as-postgres"
    wrapper.write_text(f'#!/bin/sh\nexec runuser -u postgres -- "{pg_ctl}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str

    def sqlalchemy_uri(self, database: str) -> str:
        # psycopg 3 through SQLAlchemy's `postgresql+psycopg` dialect
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}/{database}"

    def connect(self, database: str = "postgres") -> object:
        import psycopg

        return psycopg.connect(host=self.host, port=self.port, user=self.user, dbname=database, autocommit=True)


def _accepts(server: Postgres) -> bool:
    import psycopg

    try:
        with server.connect():
            return True
    except psycopg.OperationalError:
        return False


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A throw-away PostgreSQL cluster (pytest-postgresql's executor: initdb + pg_ctl) on a free loopback port."""
    from pytest_postgresql.executors import PostgreSQLExecutor

    stop_servers_on_sigterm()
    pg_ctl = find_pg_ctl()
    if pg_ctl is None:
        pytest.skip("PostgreSQL is not installed (no pg_ctl on PATH or under /usr/lib/postgresql): "
                    "`apt-get install postgresql` (.ci/run does it)")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without `runuser`: PostgreSQL cannot be started as root")
    workdir = Path(tempfile.mkdtemp(prefix="gpucost-postgres-"))
    executor = PostgreSQLExecutor(
        executable=str(pg_ctl_as_server_user(pg_ctl, workdir)), host="127.0.0.1", port=free_port(),
        datadir=str(workdir / "data"), unixsocketdir=str(workdir), logfile=str(workdir / "postgresql.log"),
        startparams="-w", dbname="gpucost", user="postgres", timeout=120,
        postgres_options="-c listen_addresses=127.0.0.1 -c fsync=off",
    )
    try:
        try:
            executor.start()
        except Exception as error:  # any reason it cannot start is a reason to skip, printed
            log = workdir / "postgresql.log"
            tail = log.read_text(errors="replace")[-500:] if log.exists() else ""
            pytest.skip(f"PostgreSQL could not start ({type(error).__name__}: {error}) {tail}")
        server = Postgres(host="127.0.0.1", port=executor.port, user="postgres")
        # the port opens while the server is still "starting up": wait until it takes a connection
        wait_until(lambda: _accepts(server), 60, "PostgreSQL", interval=0.2)
        yield server
    finally:
        with contextlib.suppress(Exception):  # never started, or already gone
            executor.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@dataclass(frozen=True)
class MlflowServer:
    uri: str                 # http://127.0.0.1:PORT, what MLFLOW_TRACKING_URI is set to
    backend_store_uri: str
    artifacts: Path
    database: str


@pytest.fixture(scope="session")
def mlflow_server(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """`mlflow server` with its backend store in PostgreSQL and a shared artifact root, as MLflow documents it."""
    database = "mlflow"
    with postgres.connect() as con:
        con.execute("create database mlflow")
    root = tmp_path_factory.mktemp("mlflow-server")
    artifacts = root / "artifacts"
    artifacts.mkdir()
    port = free_port()
    backend = postgres.sqlalchemy_uri(database)
    env = {**os.environ,
           # the GenAI job runner (7 extra processes) serves nothing the registry needs
           "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    log = root / "mlflow-server.log"
    mlflow_cli = Path(sys.executable).with_name("mlflow")
    process = start_group([str(mlflow_cli), "server", "--backend-store-uri", backend,
                           "--artifacts-destination", str(artifacts), "--host", "127.0.0.1", "--port", str(port),
                           "--workers", "1"], log, env=env, cwd=root)
    try:
        uri = f"http://127.0.0.1:{port}"
        wait_until(http_ok(f"{uri}/health"), SERVER_START_TIMEOUT_S, "mlflow server", process, log)
        yield MlflowServer(uri=uri, backend_store_uri=backend, artifacts=artifacts, database=database)
    finally:
        stop_group(process)
