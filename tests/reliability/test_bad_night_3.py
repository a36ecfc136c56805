"""A bad night, part 3: implausible inputs, a failed ingest that is not the file's fault, and files gpucost did
not make. Each probe runs the real `gpucost` command on a copy of the base state (lambda + AWS spot prices, the
sample telemetry, a champion, night FIRST_NIGHT published) and checks its exit code, its one line, and that
nothing else changed (checksums of the warehouse's tables and of the published file)."""

from __future__ import annotations

import csv
import gzip
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tests.reliability.conftest import States
from tests.reliability.driver import PRICES, TELEMETRY
from tests.reliability.helpers import assert_one_line, warehouse_checksums, whole_file_violations
from tests.reliability.test_bad_night import digest, gpucost, mount_small_tmpfs

SKYPILOT_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region," \
                  "AvailabilityZone,Arch"
H100_INFO = ("{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 8, 'LogicalGpuCount': 8, "
             "'GpuPartitionSize': 1.0, 'Workloads': ['ml-ai'], 'MemoryInfo': {'SizeInMiB': 81920}}], "
             "'TotalGpuMemoryInMiB': 655360}")


@pytest.fixture
def work_home(base_states: States, monkeypatch: pytest.MonkeyPatch) -> States:
    """The shared state folder, holding the `base` state only (these probes need no reference state of a step)."""
    monkeypatch.setenv("GPUCOST_HOME", str(base_states.work))
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(base_states.config))
    return base_states


def skypilot_row(instance: str, price: str, spot: str, region: str = "us-east-1") -> list[str]:
    return [instance, "H100", "8.0", "192.0", "2048.0", H100_INFO, price, spot, region, f"{region}a", "x86_64"]


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def config_with_prices(states: States, tmp_path: Path, entries: list[str]) -> dict[str, str]:
    """The tests' config with these [[prices]] entries after the base state's own (already ingested)."""
    config = shutil.copytree(states.config, tmp_path / "config")
    sources = config / "sources.toml"
    sources.write_text(sources.read_text(encoding="utf-8") + "\n" + "\n".join(entries), encoding="utf-8")
    return {"GPUCOST_CONFIG_DIR": str(config)}


def rows(home: Path, sql: str, params: dict | None = None) -> list[tuple]:
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        return con.execute(sql, params or {}).fetchall()


# --------------------------------------------------------------------------- implausible prices, one ingest

def test_implausible_new_offers_future_prices_duplicates_and_a_fifo_never_reach_core(
        prefect_harness, work_home: States, tmp_path: Path) -> None:
    """Probes (one `gpucost ingest prices` over the sources file):
    - a NEW offer, 8 x H100 at 0.0008 and 8e-300 USD/h (0.0001 and 1e-300 USD per GPU-hour), on-demand and spot;
    - the same file: a plausible new offer (real p5.48xlarge row, 68.8 USD/h on-demand, 23.1449 spot) three times;
    - a price-history observation dated 2099, and in the next file its correction dated today;
    - a FIFO named in the sources file (read, it would block for ever)."""
    home = work_home.restore("base")
    data = tmp_path / "data"
    data.mkdir()
    plausible = skypilot_row("p5.48xlarge", "68.8", "23.144900", "ap-northeast-1")
    new_offers = write_csv(data / "new_offers.csv", SKYPILOT_HEADER.split(","), [
        skypilot_row("p5.probe-cheap", "0.0008", "0.0008"), skypilot_row("p5.probe-tiny", "8e-300", "8e-300"),
        plausible, plausible, plausible])
    today = datetime.now(UTC).strftime("%Y-%m-%dT00:00:00")
    future = write_csv(data / "future.csv", ["timestamp", "instance", "price_usd"],
                       [["2099-01-01T00:00:00", "p5.48xlarge", "98.32"]])
    correction = write_csv(data / "correction.csv", ["timestamp", "instance", "price_usd"],
                           [[today, "p5.48xlarge", "98.00"]])
    comma = write_csv(data / "comma.csv", SKYPILOT_HEADER.split(","), [
        ["g5.xlarge", "A10G", "1.0", "4.0", "16.0", "", "3,67", "1.2", "us-east-1", "us-east-1a", "x86_64"]])
    # the same rule for every format a locale-formatted number can reach: a daily price history, an owned-GPU file
    comma_history = write_csv(data / "comma_history.csv", ["timestamp", "instance", "price_usd"],
                              [[today, "p5.48xlarge", "1,234.5"]])
    comma_owned = write_csv(data / "comma_owned.csv", ["site", "gpu", "gpu_count", "usd_per_gpu_hour_amortised",
                                                       "electricity_usd_per_kwh", "pue"],
                            [["lab", "H100", "8", "1.85", "0,21", "1.3"]])
    fifo = data / "prices.fifo"
    os.mkfifo(fifo)
    history = 'provider = "aws"\nformat = "price-history"\noptions = { region = "us-east-1" }\n'
    env = config_with_prices(work_home, tmp_path, [
        f'[[prices]]\npath = "{new_offers}"\nprovider = "aws"\nformat = "skypilot"\n',
        f'[[prices]]\npath = "{future}"\n{history}', f'[[prices]]\npath = "{correction}"\n{history}',
        f'[[prices]]\npath = "{comma}"\nprovider = "aws"\nformat = "skypilot"\n',
        f'[[prices]]\npath = "{comma_history}"\n{history}',
        f'[[prices]]\npath = "{comma_owned}"\nprovider = "owned"\nformat = "owned"\n',
        f'[[prices]]\npath = "{fifo}"\nprovider = "aws"\nformat = "skypilot"\n'])
    stored_before = rows(home, "select count(*) from core.price_observations")[0][0]

    returncode, stderr = gpucost(work_home, "ingest", "prices", env=env, timeout=120)

    assert returncode == 0, stderr[-3000:]
    # new offers: 2 records x (on-demand + spot) = 4 rows, each quarantined as implausible. 0.0001 USD/GPU-h is
    # below the flagship class floor (0.25) and ~10^4 x under the H100 median; 1e-300 also under the suite's 0.005
    rejected = rows(home, "select failed_check from quarantine.rejected_rows where source_file = $f",
                    {"f": str(new_offers)})
    assert len(rejected) == 4 and all("implausible price" in r[0] for r in rejected), rejected
    assert all("below the floor of its GPU class" in r[0] for r in rejected)
    # the plausible offer: 3 identical records = one observation per pricing (2 rows), 2 x 2 rows skipped
    stored = rows(home, "select pricing, usd_per_hour from core.price_observations where source_file = $f "
                        "order by pricing", {"f": str(new_offers)})
    assert stored == [("on_demand", 68.8), ("spot", 23.1449)]
    skipped = rows(home, "select rows_skipped, skipped_by_reason from raw.ingested_files where source_file = $f",
                   {"f": str(new_offers)})
    assert skipped[0][0] == 4 and "identical duplicate" in skipped[0][1], skipped
    # the 2099 observation is quarantined; the correction is the current price
    future_rows = rows(home, "select failed_check from quarantine.rejected_rows where source_file = $f",
                       {"f": str(future)})
    assert len(future_rows) == 1 and future_rows[0][0].endswith(
        "observation dated in the future: later than the ingest plus max_future_hours (config/settings.toml "
        "[validation.prices])"), future_rows
    assert rows(home, "select usd_per_hour from core.prices_current where instance_type = 'p5.48xlarge' "
                      "and region = 'us-east-1' and pricing = 'on_demand'") == [(98.0,)]
    # "3,67": quarantined saying why (its spot price, 1.2, is stored)
    assert rows(home, "select failed_check from quarantine.rejected_rows where source_file = $f", {"f": str(comma)}) \
        == [("price 3,67 has a comma: a decimal comma or a thousands separator, which cannot be told apart; write "
             "the price with a point and no separator (e.g. 3.67)",)]
    for path, field, text in ((comma_history, "price", "1,234.5"), (comma_owned, "electricity_usd_per_kwh", "0,21")):
        assert rows(home, "select failed_check from quarantine.rejected_rows where source_file = $f",
                    {"f": str(path)}) == [(f"{field} {text} has a comma: a decimal comma or a thousands separator, "
                                           f"which cannot be told apart; write the {field} with a point and no "
                                           "separator (e.g. 3.67)",)]
    # the FIFO: never read, quarantined for tonight, not registered (read again next run)
    assert rows(home, "select count(*) from raw.ingested_files where source_file = $f", {"f": str(fifo)}) == [(0,)]
    assert "a FIFO (named pipe), not a regular file" in rows(
        home, "select error from quarantine.rejected_files where source_file = $f", {"f": str(fifo)})[0][0]
    # nothing else reached core: exactly the 2 plausible rows, the correction and the spot price of comma.csv
    assert rows(home, "select count(*) from core.price_observations")[0][0] == stored_before + 4
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        assert whole_file_violations(con) == []


def test_a_fifo_or_a_device_given_on_the_command_line_is_one_line(work_home: States, tmp_path: Path) -> None:
    home = work_home.restore("base")
    fifo = tmp_path / "prices.fifo"
    os.mkfifo(fifo)
    before = warehouse_checksums(home / "warehouse.duckdb")
    for path, kind in ((fifo, "a FIFO (named pipe)"), (Path("/dev/zero"), "a character device")):
        returncode, stderr = gpucost(work_home, "ingest", "prices", "--provider", "aws", "--format", "skypilot",
                                     str(path), timeout=60)
        assert returncode == 2, stderr[-3000:]
        assert_one_line(stderr, str(path), kind, "not a regular file")
    assert warehouse_checksums(home / "warehouse.duckdb") == before


# --------------------------------------------------------------------------------- absurd telemetry, one ingest

ABSURD = {  # run_id suffix -> (column, value, a fragment of the reason)
    "slow": ("tokens_per_sec_per_gpu", "1e-30", "implausibly slow throughput"),
    "gpus": ("num_gpus", "1000000000", "at most max_num_gpus"),
    "params": ("params_b", "1000000", "to max_params_b"),
    "context": ("seq_len", "1000000000000", "at most max_seq_len"),
    "mfu": ("mfu", "-3", "mfu, when given, must be above 0 and at most 1"),
    "future": ("recorded_at", "2099-01-01T00:00:00Z", "recorded_at in the future"),
}


def test_absurd_telemetry_and_a_future_recorded_at_are_quarantined_and_the_correction_is_current(
        prefect_harness, work_home: States, tmp_path: Path) -> None:
    home = work_home.restore("base")
    sample = pl.read_csv(TELEMETRY, infer_schema=False).head(1).with_columns(
        pl.lit(None, pl.String).alias("recorded_at"))
    absurd = pl.concat([
        sample.with_columns(pl.lit(f"probe-{name}").alias("run_id"), pl.lit(value).alias(column))
        for name, (column, value, _) in ABSURD.items()])
    first = tmp_path / "absurd.csv"
    absurd.write_csv(first)
    today = datetime.now(UTC).strftime("%Y-%m-%dT00:00:00Z")
    second = tmp_path / "correction.csv"
    sample.with_columns(pl.lit("probe-future").alias("run_id"), pl.lit(today).alias("recorded_at")).write_csv(second)

    returncode, stderr = gpucost(work_home, "ingest", "telemetry", str(first), str(second), timeout=120)

    assert returncode == 0, stderr[-3000:]
    reasons = dict(rows(home, "select json_extract_string(raw_values, '$.run_id'), failed_check "
                              "from quarantine.rejected_rows where source_file = $f", {"f": str(first)}))
    assert set(reasons) == {f"probe-{name}" for name in ABSURD}
    for name, (_, _, fragment) in ABSURD.items():
        assert fragment in reasons[f"probe-{name}"], (name, reasons[f"probe-{name}"])
    # the correction is the run's one current record, the 2099 one is nowhere in core
    assert rows(home, "select source_file, recorded_at::date::varchar from core.telemetry_runs "
                      "where run_id like 'probe-%'") == [(str(second), today[:10])]
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        assert whole_file_violations(con) == []


# ------------------------------------------------------------------------ a failed ingest is not the file's fault

def big_price_file(path: Path, copies: int) -> Path:
    """The AWS SkyPilot sample's rows, `copies` times over, each copy in its own regions (distinct offers)."""
    lines = (PRICES / "skypilot_v8_aws_gpu_subset.csv").read_text(encoding="utf-8").splitlines()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(lines[0] + "\n")
        for copy in range(copies):
            for line in lines[1:]:
                fh.write(line.replace(",us-", f",x{copy}-us-").replace(",eu-", f",x{copy}-eu-") + "\n")
    return path


@contextmanager
def base_on_small_disk(states: States, tmp_path: Path, room_bytes: int) -> Iterator[Path]:
    """The base state on a tmpfs with `room_bytes` left (MLflow keeps absolute paths: mounted at the state folder);
    skips where mounting is not allowed."""
    home = states.restore("base")
    used = sum(-(-p.stat().st_size // 4096) * 4096 for p in home.rglob("*") if p.is_file())  # whole 4 KiB pages
    aside = tmp_path / "aside"
    shutil.move(home, aside)
    if not mount_small_tmpfs(home, used + room_bytes):
        shutil.move(aside, home)
        pytest.skip("no tmpfs mount here")
    try:
        for item in aside.iterdir():
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, home / item.name)
        yield home
    finally:
        subprocess.run(["umount", str(home)], check=False)  # the next test restores its state into the folder


def settings_with_no_free_space_minimum(states: States, tmp_path: Path) -> Path:
    """The tests' config with [disk] min_free_mb = 0: the command starts, the disk fills while it writes."""
    config = shutil.copytree(states.config, tmp_path / "config")
    settings = config / "settings.toml"
    settings.write_text(settings.read_text().replace("min_free_mb = 256", "min_free_mb = 0"))
    return config


def test_a_disk_that_fills_during_a_price_ingest_leaves_the_file_unregistered_and_the_next_run_reads_it(
        prefect_harness, work_home: States, tmp_path: Path) -> None:
    prices = big_price_file(tmp_path / "many_offers.csv", 10)  # ~9,400 records, 1.4 MB: stored, more than 1 MB
    config = settings_with_no_free_space_minimum(work_home, tmp_path)
    env = {"GPUCOST_CONFIG_DIR": str(config), "GPUCOST_INGEST_RUNNER": "sequential"}
    with base_on_small_disk(work_home, tmp_path, 1024 * 1024) as home:  # 1 MB of room
        before = warehouse_checksums(home / "warehouse.duckdb")
        returncode, stderr = gpucost(work_home, "ingest", "prices", "--provider", "aws", "--format", "skypilot",
                                     str(prices), env=env, timeout=180)
        assert returncode == 6, stderr[-3000:]
        assert_one_line(stderr, "many_offers.csv", "not the file", "not registered", "reads it again")
        assert "| ERROR" not in stderr, stderr[-3000:]  # Prefect's lines of the same failure are not said first
        assert warehouse_checksums(home / "warehouse.duckdb") == before  # nothing registered, nothing quarantined
        # room again: the same file is read, not skipped as already ingested
        subprocess.run(["mount", "-o", "remount,size=512m", str(home)], check=True)
        returncode, stderr = gpucost(work_home, "ingest", "prices", "--provider", "aws", "--format", "skypilot",
                                     str(prices), env=env, timeout=180)
        assert returncode == 0, stderr[-3000:]
        assert rows(home, "select status, rows_loaded > 0 from raw.ingested_files where source_file = $f",
                    {"f": str(prices)}) == [("loaded", True)]


def test_training_on_a_full_disk_is_one_line_naming_the_path_and_the_champion_stays(
        prefect_harness, work_home: States, tmp_path: Path) -> None:
    config = settings_with_no_free_space_minimum(work_home, tmp_path)
    with base_on_small_disk(work_home, tmp_path, 64 * 1024) as home:  # 64 KB: less than a logged model
        before = champion_version(home)
        returncode, stderr = gpucost(work_home, "train", env={"GPUCOST_CONFIG_DIR": str(config)}, timeout=300)
        assert returncode == 6, stderr[-3000:]
        assert_one_line(stderr, f"no space left on device writing {home / 'mlflow' / 'mlflow.db'}")
        assert champion_version(home) == before == "1"


def champion_version(home: Path) -> str:
    """The registered model version the `champion` alias names, read from MLflow's SQLite store."""
    import sqlite3

    with closing(sqlite3.connect(home / "mlflow" / "mlflow.db")) as db:  # closed: the test unmounts the folder
        return str(db.execute("select version from registered_model_aliases where alias = 'champion'").fetchone()[0])


# -------------------------------------------------------------------------- never replace what we did not make

def test_publish_never_replaces_a_file_or_folder_gpucost_did_not_make(work_home: States, tmp_path: Path) -> None:
    home = work_home.restore("base")
    text = tmp_path / "notes.txt"
    text.write_text("a user's notes\n")
    theirs = tmp_path / "theirs.duckdb"
    with duckdb.connect(str(theirs)) as con:
        con.execute("create table accounts as select 1 as id")
    folder = tmp_path / "their-folder"  # (a file named as the Parquet folder: exit 2, the environment's test)
    folder.mkdir()
    (folder / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    published_before = digest(home / "published.duckdb")
    probes = [  # (environment, the file named, what the line says)
        ({"GPUCOST_PUBLISHED": str(text)}, text, "is not a database gpucost published"),
        ({"GPUCOST_PUBLISHED": str(theirs)}, theirs, "is not a database gpucost published"),
        ({"GPUCOST_PARQUET_DIR": str(folder)}, folder, "is a folder gpucost did not make"),
    ]
    for env, named, fragment in probes:
        before = digest(folder / "passwd") if named == folder else digest(named)
        returncode, stderr = gpucost(work_home, "publish", env=env, timeout=120)
        assert returncode == 5, stderr[-3000:]
        assert_one_line(stderr, str(named), fragment, "nothing was written")
        assert (digest(folder / "passwd") if named == folder else digest(named)) == before
        assert [p.name for p in folder.iterdir()] == ["passwd"]
    # the `sql` hint says the same: publish will not replace it
    returncode, stderr = gpucost(work_home, "sql", "select 1", env={"GPUCOST_PUBLISHED": str(text)}, timeout=60)
    assert returncode == 5
    assert_one_line(stderr, str(text), "not a file gpucost published", "will not replace it")
    assert digest(home / "published.duckdb") == published_before


# ------------------------------------------------------------------------------------------ bounded `gpucost sql`

def test_sql_is_bounded_in_time_rows_and_cells_and_ctrl_c_is_one_line(work_home: States) -> None:
    home = work_home.restore("base")
    before = digest(home / "published.duckdb")
    # a query that would run for hours: stopped by the watchdog at 1 s
    returncode, stderr = gpucost(work_home, "sql", "select sum(hash(a)) from range(100000000000) t(a)",
                                 "--timeout", "1", timeout=60)
    assert returncode == 1
    assert_one_line(stderr, "query stopped after 1 s", "timeout_seconds", "--timeout 0")
    # 5,000 rows: the table view shows the configured 1,000 and says so; --csv streams all 5,000 (+ the header)
    returncode, _ = gpucost(work_home, "sql", "select * from range(5000)", timeout=60)
    from tests.reliability.test_bad_night import last_stdout
    assert returncode == 0
    assert "1000 row(s) shown; the result has more (--max-rows 0 shows every row, --csv streams them)" in \
        " ".join(last_stdout[0].split())
    returncode, _ = gpucost(work_home, "sql", "select * from range(5000)", "--csv", timeout=60)
    assert returncode == 0 and len(last_stdout[0].splitlines()) == 5001
    # a 20,000-character cell: cut at 10,000 with a mark saying 10,000 more, and a note; control and
    # bidirectional characters shown escaped, not written raw
    returncode, _ = gpucost(work_home, "sql", "select repeat('x', 20000) as big, 'gpu' || chr(8238) || 'evil' || "
                            "chr(10) || 'error: fake' as odd", timeout=60)
    shown = last_stdout[0]
    assert returncode == 0 and "… [cut: 10,000 more characters]" in shown
    assert "1 cell(s) longer than 10,000 characters cut" in " ".join(shown.split())
    assert "\u202e" not in shown and "gpu\\u202eevil\\nerror: fake" in shown
    # DuckDB's memory cap is the configured one (1GB = 953.6 MiB) or the flag's (512MB = 488.2 MiB)
    for flags, expected in (((), "953.6 MiB"), (("--memory-limit", "512MB"), "488.2 MiB")):
        returncode, _ = gpucost(work_home, "sql", "select current_setting('memory_limit')", "--csv", *flags)
        assert returncode == 0 and last_stdout[0].splitlines()[1] == expected
    # Ctrl-C during a long query: exit 130, one line
    env = {**os.environ, "GPUCOST_HOME": str(home), "GPUCOST_CONFIG_DIR": str(work_home.config)}
    child = subprocess.Popen([str(Path(sys.executable).with_name("gpucost")), "sql",
                              "select sum(hash(a)) from range(100000000000) t(a)", "--timeout", "0"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Ctrl-C once the query computes (DuckDB's threads have used CPU): a Ctrl-C sent earlier, while the command
    # starts or opens the database, is exit 130 and one line too, but would not prove a running query stops
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None and worker_cpu_seconds(child.pid) < 0.5:
        time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=30)
    assert child.returncode == 130, stderr[-3000:]
    assert_one_line(stderr, "interrupted", "Ctrl-C")
    assert digest(home / "published.duckdb") == before


def test_a_ctrl_c_that_comes_before_duckdb_starts_the_query_still_stops_it() -> None:
    """DuckDB forgets an interrupt that comes before its query starts; under load a Ctrl-C lands in that gap
    (between the handler going in and the statement reaching DuckDB) often enough to hang the command."""
    from gpucost.sql_bounds import ctrl_c_interrupts, is_interrupt

    con = duckdb.connect()
    backstop = threading.Timer(30, con.interrupt)  # the old behaviour ran for ever: stop it so the test can fail
    backstop.start()
    started = time.monotonic()
    try:
        with ctrl_c_interrupts(con) as pressed:
            os.kill(os.getpid(), signal.SIGINT)
            assert pressed.wait(5)
            time.sleep(0.2)  # the waiting thread has interrupted the idle connection by now
            with pytest.raises((duckdb.InterruptException, RuntimeError)) as stopped:
                con.execute("select sum(hash(a)) from range(100000000000) t(a)").fetchall()
    finally:
        backstop.cancel()
        con.close()
    assert is_interrupt(stopped.value) and time.monotonic() - started < 10


def worker_cpu_seconds(pid: int) -> float:
    """CPU seconds used by the process's threads other than its main thread (/proc/PID/task/*/stat utime + stime):
    DuckDB computes a query on its own threads."""
    ticks = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        if task.name == str(pid):
            continue
        try:
            fields = (task / "stat").read_text(encoding="ascii").rpartition(")")[2].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # fields 14 and 15 of stat(5), counted after the ")"
    return ticks / os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------------- environment, display, predict, offers

BAD_ENVIRONMENT = [  # (variable, value, fragment of the one line); {tmp} is the test's folder
    ("GPUCOST_HOME", "{tmp}/a-file", "GPUCOST_HOME={tmp}/a-file: not a folder"),
    ("GPUCOST_HOME", "{tmp}/read-only/home", "GPUCOST_HOME={tmp}/read-only/home: its parent {tmp}/read-only is "
                                             "read-only"),
    ("GPUCOST_CONFIG_DIR", "{tmp}/nowhere", "GPUCOST_CONFIG_DIR={tmp}/nowhere: no such folder"),
    ("GPUCOST_WAREHOUSE", "{tmp}", "GPUCOST_WAREHOUSE={tmp}: a folder, not a file"),
    ("GPUCOST_PUBLISHED", "{tmp}/a-file/published.duckdb", "GPUCOST_PUBLISHED={tmp}/a-file/published.duckdb: "
                                                          "{tmp}/a-file is not a folder"),
    ("GPUCOST_PARQUET_DIR", "{tmp}/a-file", "GPUCOST_PARQUET_DIR={tmp}/a-file: not a folder"),
    ("GPUCOST_FETCH_AZURE_URL", "ftp:/nowhere", "GPUCOST_FETCH_AZURE_URL='ftp:/nowhere': give an http:// or "
                                                "https:// URL with a host"),
    ("GPUCOST_NIGHTLY_CRON", "61 * * * *", "GPUCOST_NIGHTLY_CRON='61 * * * *': not a cron expression"),
    ("GPUCOST_NIGHTLY_TIMEZONE", "Mars/Olympus", "GPUCOST_NIGHTLY_TIMEZONE='Mars/Olympus': not a time zone name"),
]


def read_only_folder(at: Path) -> bool:
    """A read-only bind of an empty folder (root ignores file modes; a read-only mount it cannot write)."""
    at.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(at)], capture_output=True)
    return done.returncode == 0


def test_every_bad_environment_override_is_one_line_naming_the_variable_before_anything_starts(
        work_home: States, tmp_path: Path) -> None:
    home = work_home.restore("base")
    (tmp_path / "a-file").write_text("not a folder\n")
    mounted = read_only_folder(tmp_path / "read-only")
    before = warehouse_checksums(home / "warehouse.duckdb"), digest(home / "published.duckdb")
    try:
        for variable, value, fragment in BAD_ENVIRONMENT:
            if "read-only" in value and not mounted:
                continue
            returncode, stderr = gpucost(work_home, "publish", env={variable: value.format(tmp=tmp_path)}, timeout=60)
            assert returncode == 2, (variable, stderr[-3000:])
            assert_one_line(stderr, fragment.format(tmp=tmp_path))
            assert "Starting temporary server" not in stderr and "Flow run" not in stderr
        if mounted:  # training on a read-only disk: the same line, before MLflow or Prefect start
            read_only_home = f"{tmp_path}/read-only/home"
            returncode, stderr = gpucost(work_home, "train", env={"GPUCOST_HOME": read_only_home}, timeout=60)
            assert returncode == 2, stderr[-3000:]
            assert_one_line(stderr, f"GPUCOST_HOME={read_only_home}: its parent {tmp_path}/read-only is read-only")
    finally:
        if mounted:
            subprocess.run(["umount", str(tmp_path / "read-only")], check=False)
    assert (warehouse_checksums(home / "warehouse.duckdb"), digest(home / "published.duckdb")) == before


def test_paths_and_values_are_printed_on_one_line_and_bad_numbers_are_refused(work_home: States,
                                                                              tmp_path: Path) -> None:
    work_home.restore("base")
    # a newline in a path: one line, the newline shown as \n (no second, fake `error:` line)
    returncode, stderr = gpucost(work_home, "ingest", "prices", "--provider", "aws", "--format", "skypilot",
                                 str(tmp_path / "x\nerror: all good"), timeout=60)
    assert returncode == 2
    assert_one_line(stderr, "x\\nerror: all good: no such file or directory")
    # a 300-character file name: one line
    returncode, stderr = gpucost(work_home, "predict", str(tmp_path / ("a" * 300 + ".csv")), "-o",
                                 str(tmp_path / "out.csv"), timeout=60)
    assert returncode == 2
    assert_one_line(stderr, "File name too long")
    for value in ("nan", "inf", "0", "-5"):
        returncode, stderr = gpucost(work_home, "offers", "--max-hours", value, timeout=60)
        assert returncode == 2, stderr
        assert_one_line(stderr, f"--max-hours {float(value)}: give a number above 0")


def test_offers_shows_provider_names_escaped_never_obeyed(work_home: States, tmp_path: Path) -> None:
    """A provider's instance and region names reach `gpucost offers` from its price list: a right-to-left override,
    a newline and rich markup in them are shown as escapes and text (a copy of the published file, renamed)."""
    home = work_home.restore("base")
    published = tmp_path / "published.duckdb"
    shutil.copy(home / "published.duckdb", published)
    with duckdb.connect(str(published)) as con:
        # gpu_cost_ranking is a view of the history's newest night: the stored rows are changed there
        con.execute("update gpu_cost_ranking_history set instance_type = 'p5' || chr(8238) || 'lave' || chr(10) || "
                    "'[bold]x', region = 'r' || chr(27) || '[31m'")
    returncode, stderr = gpucost(work_home, "offers", "--limit", "1", env={"GPUCOST_PUBLISHED": str(published)},
                                 timeout=60)
    from tests.reliability.test_bad_night import last_stdout
    shown = last_stdout[0]
    assert returncode == 0, stderr[-3000:]
    assert "\u202e" not in shown and "\x1b" not in shown
    assert "p5\\u202elave\\n[bold]x" in shown and "r\\x1b[31m" in shown


def test_predict_refuses_a_header_only_input_and_leaves_rows_outside_the_bounds_unscored(
        work_home: States, tmp_path: Path) -> None:
    work_home.restore("base")
    sample = pl.read_csv(TELEMETRY, infer_schema=False).head(4).drop("tokens_per_sec_per_gpu")
    header_only = tmp_path / "header.csv"
    sample.head(0).write_csv(header_only)
    returncode, stderr = gpucost(work_home, "predict", str(header_only), "-o", str(tmp_path / "o.csv"), timeout=120)
    assert returncode == 1
    assert_one_line(stderr, "header.csv: no rows to predict (a header only)")
    # the 4th row stays a real run: its own params_b, not a 7 beside its 30B active parameters (that row is
    # refused on its own account, "active_params_b 29.9752 exceeds params_b 7")
    params_b = sample["params_b"].to_list()
    absurd = sample.with_columns(pl.Series("num_gpus", ["1000000000", "8", "8", "8"]),
                                 pl.Series("params_b", [params_b[0], "1e-300", params_b[2], params_b[3]]),
                                 pl.Series("micro_batch", ["2", "2", "-4", "2"]))
    rows_in, rows_out = tmp_path / "absurd.csv", tmp_path / "predicted.csv"
    absurd.write_csv(rows_in)
    returncode, stderr = gpucost(work_home, "predict", str(rows_in), "-o", str(rows_out), timeout=120)
    assert returncode == 0, stderr[-3000:]
    assert "RuntimeWarning" not in stderr  # the absurd rows never reach the model's arithmetic
    result = pl.read_csv(rows_out).select("predicted_tokens_per_sec_per_gpu", "unscored_reason").rows()
    assert [r[1] for r in result[:3]] == [
        "num_gpus 1000000000 outside 1..250000 (config/telemetry.toml [validation])",
        "params_b 1e-300 outside 0.01..100000 (config/telemetry.toml [validation])",
        "micro_batch -4 outside 1..100000 (config/telemetry.toml [validation])"]
    assert all(r[0] is None for r in result[:3]) and result[3][0] > 0 and result[3][1] is None


# ---------------------------------------------------------------------------------------- bounded `gpucost fetch`

class HostileServer(ThreadingHTTPServer):
    """127.0.0.1: /trickle sends a CSV header, then a byte every 0.2 s for ever; /bomb sends 64 KB of gzip that
    expands to 64 MB."""

    daemon_threads = True
    bomb = gzip.compress(b"InstanceType,Price\n" + b"0" * 64_000_000, compresslevel=9)


class HostileHandler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # the http.server name
        if "/trickle/" in self.path:
            self.send_response(200)
            self.send_header("Content-Type", "text/csv")
            self.end_headers()
            try:
                self.wfile.write(b"InstanceType,Price\n")
                for _ in range(600):
                    self.wfile.write(b"0")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                return  # the client gave up: what the test wants
        else:
            self.send_response(200)
            self.send_header("Content-Type", "text/csv")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(HostileServer.bomb)))
            self.end_headers()
            self.wfile.write(HostileServer.bomb)


def test_fetch_stops_a_trickling_server_at_the_deadline_and_a_gzip_bomb_at_the_size_cap(
        prefect_harness, work_home: States, tmp_path: Path) -> None:
    home = work_home.restore("base")
    config = shutil.copytree(work_home.config, tmp_path / "config")
    fetch = config / "fetch.toml"
    fetch.write_text(fetch.read_text().replace("provider_deadline_seconds = 1800", "provider_deadline_seconds = 3")
                     .replace("max_file_mb = 4096", "max_file_mb = 5"))
    server = HostileServer(("127.0.0.1", 0), HostileHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    prices_before = rows(home, "select count(*), sum(hash(t)::hugeint) from core.price_observations t")
    try:
        for path, fragment in (("trickle", "stopped after 3 s"), ("bomb", "expands past 5 MB")):
            env = {"GPUCOST_CONFIG_DIR": str(config),
                   "GPUCOST_FETCH_SKYPILOT_URL": f"http://127.0.0.1:{server.server_port}/{path}"}
            started = time.monotonic()
            returncode, stderr = gpucost(work_home, "fetch", "-p", "skypilot", env=env, timeout=180)
            assert returncode == 1, stderr[-3000:]
            assert_one_line(stderr, "fetch skypilot failed", fragment, "the last good prices are kept")
            if path == "trickle":  # 120 s of reads (600 bytes, 0.2 s apart) cut at 3 s
                assert time.monotonic() - started < 60
    finally:
        server.shutdown()
    assert not list((home / "downloads").rglob("*vms.csv*"))  # nothing of either kept
    assert rows(home, "select count(*), sum(hash(t)::hugeint) from core.price_observations t") == prices_before


def test_a_disk_that_fills_during_fetch_is_one_line_naming_the_file(
        prefect_harness, work_home: States, tmp_path: Path) -> None:
    config = settings_with_no_free_space_minimum(work_home, tmp_path)
    server = HostileServer(("127.0.0.1", 0), HostileHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {"GPUCOST_CONFIG_DIR": str(config), "GPUCOST_FETCH_SKYPILOT_URL": f"http://127.0.0.1:{server.server_port}/bomb"}
    try:
        # 1 MB of room; the response expands to 64 MB, under the size cap (4096 MB): the disk fills first
        with base_on_small_disk(work_home, tmp_path, 1024 * 1024) as home:
            prices_before = rows(home, "select count(*), sum(hash(t)::hugeint) from core.price_observations t")
            returncode, stderr = gpucost(work_home, "fetch", "-p", "skypilot", env=env, timeout=180)
            assert returncode == 6, stderr[-3000:]  # README: the disk filled up during the step
            line = assert_one_line(stderr, "fetch skypilot failed: no space left on device writing "
                                           f"{home / 'downloads'}", "the last good prices are kept")
            written = Path(line.split(" writing ", 1)[1].split(" ", 1)[0].rstrip(";"))
            assert written.name.endswith("vms.csv") and not written.exists()  # the catalog it would have been
            assert not list((home / "downloads").rglob("*vms.csv*"))
            assert rows(home, "select count(*), sum(hash(t)::hugeint) from core.price_observations t") == prices_before
    finally:
        server.shutdown()
