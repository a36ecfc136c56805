from __future__ import annotations

import duckdb
import pytest

from tasks.warehouse import connect, migrate


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


def test_a_second_writer_gets_a_clear_busy_error(tmp_path, con) -> None:  # noqa: ANN001
    import subprocess
    import sys

    from tasks.settings import paths

    # The fixture's connection holds the lock; another process must be told who holds it.
    code = (
        "from tasks.warehouse import connect, WarehouseBusyError\n"
        "try:\n    connect()\nexcept WarehouseBusyError as e:\n    print('BUSY', e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "BUSY" in done.stdout and str(paths().warehouse) in done.stdout
    with pytest.raises(FileNotFoundError):
        connect(tmp_path / "nowhere.duckdb", read_only=True)
