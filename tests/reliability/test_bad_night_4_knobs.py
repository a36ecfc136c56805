"""Issue 41 (a bad night costs nothing, part 4): every knob bounded at the door, one line on each failure path, and
a workloads check that scales. Each case runs the real command line and asserts the one line on stderr, the exit
code, and that no file it could touch changed (checksums before and after)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.cli.night import GPUCOST
from tests.cli.test_config_errors import config_copy, edit
from tests.conftest import FIXTURES
from tests.reliability.conftest import States

PREDICT_INPUT = FIXTURES / "model_predict_input.csv"


def checksums(root: Path) -> dict[str, str]:
    """Every file under `root` by its path, with its SHA-256."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def gpucost_in(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`gpucost ARGS` run from `root` with its own home and, when `root/config` exists, that config folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUCOST_", "PREFECT_", "MLFLOW_"))}
    env["GPUCOST_HOME"] = str(root / "home")
    if (root / "config").is_dir():
        env["GPUCOST_CONFIG_DIR"] = str(root / "config")
    return subprocess.run([str(GPUCOST), *args], capture_output=True, text=True, env=env, cwd=root,
                          timeout=timeout)


def published_home(root: Path) -> Path:
    """A home holding a small published database (the one `gpucost sql` queries by default) and a warehouse."""
    home = root / "home"
    home.mkdir(parents=True)
    for name in ("published.duckdb", "warehouse.duckdb"):
        con = duckdb.connect(str(home / name))
        con.execute("create table t as select 1 as a")
        con.close()
    return home


def one_line(done: subprocess.CompletedProcess[str], code: int, message: str) -> None:
    assert done.returncode == code, done.stderr[-2000:]
    assert done.stderr == f"error: {message}\n", done.stderr[-2000:]


# --------------------------------------------------------------------------------------------------- gpucost sql

BAD_SQL_FLAGS = {
    "--timeout 1e12": (["--timeout", "1e12"],
                       "--timeout 1e+12: give a number of seconds from 0 to 86,400 (0: no limit)"),
    "--memory-limit abc": (["--memory-limit", "abc"],
                           "--memory-limit: must be a size above 0 such as 600MB or 4GiB (got 'abc')"),
    "--memory-limit -5GB": (["--memory-limit", "-5GB"],  # DuckDB reads a negative cap as none at all
                            "--memory-limit: must be a size above 0 such as 600MB or 4GiB (got '-5GB')"),
    "--memory-limit 0GB": (["--memory-limit", "0GB"],
                           "--memory-limit: must be a size above 0 such as 600MB or 4GiB (got '0GB')"),
}


@pytest.mark.parametrize("case", list(BAD_SQL_FLAGS))
def test_a_sql_flag_out_of_bounds_is_one_line_exit_2(tmp_path: Path, case: str) -> None:
    home = published_home(tmp_path)
    before = checksums(home)
    flags, message = BAD_SQL_FLAGS[case]
    one_line(gpucost_in(tmp_path, "sql", *flags, "select 1"), 2, message)
    assert checksums(home) == before


def test_sql_within_bounds_still_answers(tmp_path: Path) -> None:
    published_home(tmp_path)
    done = gpucost_in(tmp_path, "sql", "--memory-limit", "512mb", "--timeout", "30", "--csv", "select a, 'x' as a "
                      "from t")
    assert (done.returncode, done.stdout, done.stderr) == (0, "a,a\n1,x\n", "")


@pytest.mark.parametrize("csv", [True, False], ids=["csv", "table"])
def test_a_row_past_the_text_budget_never_reaches_the_client(tmp_path: Path, csv: bool) -> None:
    """[sql] max_result_mb = 1: a 2,000,000-character value (2 MB of text) is refused inside DuckDB, one line."""
    edit(config_copy(tmp_path) / "settings.toml", "max_result_mb = 256", "max_result_mb = 1")
    home = published_home(tmp_path)
    before = checksums(home)
    done = gpucost_in(tmp_path, "sql", *(["--csv"] if csv else []), "select repeat('x', 2000000) as big")
    one_line(done, 1, "query stopped: a row of the result holds more than 1 MB of text (config/settings.toml [sql] "
                      "max_result_mb; select fewer or shorter values, e.g. left(column, 1000))")
    assert "x" * 1000 not in done.stdout
    assert checksums(home) == before


def test_the_table_view_stops_when_its_rows_pass_the_text_budget(tmp_path: Path) -> None:
    """Rows of 600,000 characters each: the first fits 1 MB (1,048,576 B), the first two (1,200,000) do not."""
    edit(config_copy(tmp_path) / "settings.toml", "max_result_mb = 256", "max_result_mb = 1")
    published_home(tmp_path)
    done = gpucost_in(tmp_path, "sql", "select repeat('x', 600000) as big from range(3)")
    one_line(done, 1, "query stopped: the 3 row(s) the table view holds hold more than 1 MB of text "
                      "(config/settings.toml [sql] max_result_mb; select fewer or shorter values, e.g. "
                      "left(column, 1000))")
    streamed = gpucost_in(tmp_path, "sql", "--csv", "select repeat('x', 600000) as big from range(3)")
    assert streamed.returncode == 0 and streamed.stdout.count("x" * 600000) == 3  # CSV holds one batch at a time


def test_sql_on_a_warehouse_another_process_holds_exits_4(tmp_path: Path) -> None:
    """README: exit 4 when another process holds the warehouse (e.g. an ingest writing it)."""
    home = published_home(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('held', "
         "flush=True); time.sleep(120)", str(home / "warehouse.duckdb")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        done = gpucost_in(tmp_path, "sql", "--warehouse", "select 1")
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 4, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    assert "warehouse.duckdb" in done.stderr


# ------------------------------------------------------------------------------------------------ other flags

@pytest.mark.parametrize("value", ["nan", "-0", "0", "inf", "-5"])
def test_max_co2_kg_is_refused_as_max_hours_and_max_usd_are(tmp_path: Path, value: str) -> None:
    home = published_home(tmp_path)
    before = checksums(home)
    shown = str(float(value))
    one_line(gpucost_in(tmp_path, "offers", "--max-co2-kg", value), 2, f"--max-co2-kg {shown}: give a number above 0")
    one_line(gpucost_in(tmp_path, "offers", "--max-hours", value), 2, f"--max-hours {shown}: give a number above 0")
    assert checksums(home) == before


def test_predict_to_a_name_the_file_system_cannot_hold_is_one_line(tmp_path: Path) -> None:
    output = tmp_path / ("p" * 300 + ".csv")
    done = gpucost_in(tmp_path, "predict", str(PREDICT_INPUT), "-o", str(output))
    one_line(done, 2, f"{output}: File name too long")
    assert not (tmp_path / "home").exists()


# ----------------------------------------------------------------------------------------------- config values

BAD_SETTINGS = {
    "ingest memory_limit not a size": ('memory_limit = "600MB"', 'memory_limit = "lots"',
                                       "config/settings.toml: ingest.memory_limit: must be a size above 0 such as "
                                       "600MB or 4GiB (got 'lots')"),
    "ingest memory_limit negative (no cap)": ('memory_limit = "600MB"', 'memory_limit = "-1GB"',
                                              "config/settings.toml: ingest.memory_limit: must be a size above 0 "
                                              "such as 600MB or 4GiB (got '-1GB')"),
    "sql timeout past a day": ("timeout_seconds = 60", "timeout_seconds = 1e12",
                               "config/settings.toml: sql.timeout_seconds: must be <= 86400 (got 1000000000000.0)"),
}


@pytest.mark.parametrize("case", list(BAD_SETTINGS))
def test_a_bad_settings_value_is_refused_at_the_config_check(tmp_path: Path, case: str) -> None:
    old, new, message = BAD_SETTINGS[case]
    edit(config_copy(tmp_path) / "settings.toml", old, new)
    one_line(gpucost_in(tmp_path, "ingest", "prices"), 2, message)
    assert not (tmp_path / "home" / "warehouse.duckdb").exists()


BAD_RANKING = {
    "ranking memory_limit negative (no cap)": ('memory_limit = "1GB"', 'memory_limit = "-1GB"',
                                               "config/ranking.toml: compute.memory_limit: must be a size above 0 "
                                               "such as 600MB or 4GiB (got '-1GB')"),
    "parquet memory_limit zero": ('parquet_memory_limit = "512MB"', 'parquet_memory_limit = "0MB"',
                                  "config/ranking.toml: publish.parquet_memory_limit: must be a size above 0 "
                                  "such as 600MB or 4GiB (got '0MB')"),
}


@pytest.mark.parametrize("case", list(BAD_RANKING))
def test_a_bad_ranking_memory_cap_is_refused_at_the_config_check(tmp_path: Path, case: str) -> None:
    old, new, message = BAD_RANKING[case]
    edit(config_copy(tmp_path) / "ranking.toml", old, new)
    one_line(gpucost_in(tmp_path, "publish"), 2, message)
    assert not (tmp_path / "home" / "warehouse.duckdb").exists()


def test_a_non_utf8_byte_in_a_config_file_is_one_line_naming_it(tmp_path: Path) -> None:
    models = config_copy(tmp_path) / "models.toml"
    data = models.read_bytes()
    lines = data.split(b"\n")
    lines[2] = lines[2] + b" \xff"  # third line, after its text
    models.write_bytes(b"\n".join(lines))
    column = len(lines[2])  # the byte's own column, counted from 1
    one_line(gpucost_in(tmp_path, "train"), 2,
             f"config/models.toml: not valid TOML (byte 0xff at line 3, column {column} is not UTF-8)")
    assert not (tmp_path / "home" / "warehouse.duckdb").exists()


# ------------------------------------------------------------------------------------------------------ messages

@pytest.mark.slow
def test_publish_on_an_empty_home_is_one_line_without_prefect_errors(tmp_path: Path) -> None:
    done = gpucost_in(tmp_path, "publish", timeout=300)
    one_line(done, 1, "the warehouse has no current price offer (core.prices_current is empty): nothing to rank; "
                      "nothing was published and the previous night stays served (run `gpucost ingest prices` "
                      "first)")
    assert "ERROR" not in done.stdout + done.stderr


# --------------------------------------------------------------------------------------------------------- scale

def workloads_config(root: Path, count: int) -> Path:
    """config/ with `count` workloads (the same small dense model, each its own name)."""
    config = config_copy(root)
    entry = ('[[workloads]]\nname = "w{}"\nworkload = "pretrain"\nparams_b = 6.74\nn_layers = 32\nd_model = 4096\n'
             'seq_len = 4096\nprecision = "bf16"\ntoken_budget = 1_000_000_000_000\n')
    (config / "workloads.toml").write_text("".join(entry.format(i) for i in range(count)), encoding="utf-8")
    return config


def test_the_workloads_check_is_linear(tmp_path: Path) -> None:
    """20,000 workloads validated (each entry, and names unique) in seconds: a name counted in the whole list per
    name took 51 s for the duplicate check alone on this machine."""
    from tasks.ranking.config import ranking_config
    from tasks.ranking.workloads import load_workloads, workloads_from

    tables = {"workloads": [{"name": f"w{i}", "workload": "pretrain", "params_b": 6.74, "n_layers": 32,
                             "d_model": 4096, "seq_len": 4096, "precision": "bf16", "token_budget": 1e12}
                            for i in range(20_000)]}
    started = time.perf_counter()
    frame = load_workloads(workloads_from(tables), ranking_config())
    seconds = time.perf_counter() - started
    assert frame.height == 20_000 and seconds < 8, seconds
    tables["workloads"].append(dict(tables["workloads"][7]))
    with pytest.raises(ValueError, match=r"workload name listed twice: w7$"):
        load_workloads(workloads_from(tables), ranking_config())


@pytest.mark.slow
def test_gpucost_workloads_lists_20000_workloads_in_seconds(tmp_path: Path) -> None:
    workloads_config(tmp_path, 20_000)
    started = time.perf_counter()
    done = gpucost_in(tmp_path, "workloads")
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 20_001 and "w19999 " in done.stdout
    assert seconds < 30, seconds  # 57.9 s before (5,000: 7.2 s), 6.6 s after on a loaded 2-core machine


@pytest.mark.slow
def test_predict_on_a_read_only_home_says_why_the_champion_cannot_load(base_states: States, tmp_path: Path) -> None:
    """The champion exists, but its home is a read-only mount (root ignores file modes): MLflow writes
    registered_model_meta beside the model when it loads it. Not "no champion ... run gpucost train first"."""
    source = shutil.copytree(base_states.snapshots / "base", tmp_path / "home-source")
    home = tmp_path / "home"
    home.mkdir()
    if subprocess.run(["mount", "--bind", "-o", "ro", str(source), str(home)], capture_output=True).returncode:
        pytest.skip("no read-only bind mount here")
    try:
        before = checksums(home)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUCOST_", "PREFECT_", "MLFLOW_"))}
        env |= {"GPUCOST_HOME": str(home), "GPUCOST_CONFIG_DIR": str(base_states.config)}
        done = subprocess.run([str(GPUCOST), "predict", str(PREDICT_INPUT), "-o", str(tmp_path / "out.csv")],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        one_line(done, 1, f"the champion (v1 of token-efficiency in sqlite:///{home}/mlflow/mlflow.db) cannot "
                          f"be loaded: {home}/mlflow/artifacts is read-only, and MLflow writes a file "
                          "(registered_model_meta) into a local model's folder each time it loads it; run gpucost "
                          f"predict with GPUCOST_HOME on a writable copy of {home}")
        assert checksums(home) == before
    finally:
        subprocess.run(["umount", str(home)], check=False)
