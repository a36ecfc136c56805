from __future__ import annotations

import duckdb
import pytest

from tasks.warehouse import connect, migrate
from tests import configured


def test_migrate_is_idempotent(con: duckdb.DuckDBPyConnection) -> None:
    before = con.execute("select table_schema, table_name from information_schema.tables order by 1, 2").fetchall()
    migrate(con)
    migrate(con)
    after = con.execute("select table_schema, table_name from information_schema.tables order by 1, 2").fetchall()
    assert before == after
    names = {f"{s}.{t}" for s, t in after}
    for required in (
        "core.price_observations",
        "core.prices_current",
        "core.gpu_specs",
        "quarantine.rejected_rows",
        "quarantine.rejected_files",
        "raw.ingested_files",
    ):
        assert required in names


def test_reference_tables_loaded_from_shipped_files(con: duckdb.DuckDBPyConnection) -> None:
    # data/reference/gpu_specs.csv: H100-SXM dense BF16 peak 989 TFLOP/s, TDP 700 W.
    row = con.execute("select bf16_dense_tflops, tdp_w from core.gpu_specs where gpu = 'H100-SXM'").fetchone()
    assert row == (989.0, 700.0)
    # Case matters: Lambda 'RTX6000' is a Turing card, GCP 'rtx6000' a Blackwell one.
    aliases = dict(con.execute("select alias, gpu from core.gpu_aliases where lower(alias) = 'rtx6000'").fetchall())
    assert aliases == {"RTX6000": "Quadro-RTX-6000", "rtx6000": "RTX-PRO-6000-Server"}


def test_a_second_writer_gets_a_clear_busy_error(tmp_path, con) -> None:
    import subprocess
    import sys


    # The fixture's connection holds the lock; another process must be told who holds it.
    code = (
        "from tasks.warehouse import connect, WarehouseBusyError\n"
        "from tests import configured\n"
        "try:\n    connect(configured.resources().warehouse)\nexcept WarehouseBusyError as e:\n    print('BUSY', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "BUSY" in done.stdout and str(configured.resources().warehouse) in done.stdout
    with pytest.raises(FileNotFoundError):
        connect(tmp_path / "nowhere.duckdb", read_only=True)


def test_a_warehouse_made_with_the_run_id_key_loses_it_and_keeps_its_runs(tmp_path) -> None:
    # Warehouses made before core.telemetry_runs lost its primary key (sql/ddl/040_core_telemetry.sql) had
    # `run_id varchar not null primary key`; the rows must survive the rebuild, with the columns as defined now.
    from tasks.warehouse import SQL_DIR

    path = tmp_path / "old.duckdb"
    ddl = (SQL_DIR / "ddl" / "040_core_telemetry.sql").read_text(encoding="utf-8")
    keyed = ddl.replace("run_id varchar not null,", "run_id varchar not null primary key,", 1)
    assert keyed != ddl
    old = duckdb.connect(str(path))
    old.execute("create schema core")
    old.execute(keyed)
    old.execute(
        "insert into core.telemetry_runs (run_id, gpu, num_gpus, params_b, active_params_b, seq_len, precision, "
        "workload, tokens_per_sec_per_gpu, record_hash, source_file, content_sha256, ingested_at) values "
        "('r1', 'H100-SXM', 8, 7.0, 7.0, 4096, 'bf16', 'pretrain', 3000.0, 'h1', 'a.csv', 's', '2026-01-01'), "
        "('r2', 'A100-SXM4-80GB', 16, 13.0, 13.0, 2048, 'fp16', 'sft', 1200.5, 'h2', 'a.csv', 's', '2026-01-01')"
    )
    old.close()

    con = connect(path)
    constraints = con.execute(
        "select constraint_type from duckdb_constraints() where table_name = 'telemetry_runs' order by 1"
    ).fetchall()
    assert ("PRIMARY KEY",) not in constraints and ("NOT NULL",) in constraints
    assert con.execute(
        "select run_id, num_gpus, tokens_per_sec_per_gpu from core.telemetry_runs order by run_id"
    ).fetchall() == [("r1", 8, 3000.0), ("r2", 16, 1200.5)]
    assert con.execute("select count(*) from duckdb_tables() where table_name = 'telemetry_runs_keyed'").fetchall() == [
        (0,)]
    columns = con.execute("select column_name from duckdb_columns() where table_name = 'telemetry_runs'").fetchall()
    con.close()
    fresh = connect(tmp_path / "fresh.duckdb")
    assert columns == fresh.execute(
        "select column_name from duckdb_columns() where table_name = 'telemetry_runs'").fetchall()
    fresh.close()
