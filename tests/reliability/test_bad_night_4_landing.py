"""A bad night, part 4: the landing zone. Each probe runs the real `gpucost` command on a copy of the base state and
checks its exit code, its one line (no Prefect ERROR line before it), and that nothing else changed on disk
(checksums of the warehouse's tables and of every file in the landing folder)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from tasks.ingest.landing import landed_content_sha256
from tests.reliability.conftest import States
from tests.reliability.driver import PRICES, TELEMETRY
from tests.reliability.helpers import assert_one_line, warehouse_checksums
from tests.reliability.test_bad_night import gpucost


@pytest.fixture
def work_home(base_states: States, monkeypatch: pytest.MonkeyPatch) -> States:
    """The shared state folder, holding the `base` state only."""
    monkeypatch.setenv("GPUCOST_HOME", str(base_states.work))
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(base_states.config))
    return base_states


def tree_checksums(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def no_prefect_errors(stderr: str) -> None:
    assert "| ERROR" not in stderr, stderr[-4000:]


def landed_telemetry(home: Path) -> tuple[Path, str]:
    """The base state's landed copy of the sample telemetry file, and the hash its name claims."""
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        path, sha = con.execute("select landed_path, content_sha256 from raw.ingested_files where source_file = ?",
                                [str(TELEMETRY)]).fetchall()[0]
    return home / "landing" / path, sha


def test_a_landing_folder_gpucost_did_not_make_is_refused_in_one_line_and_keeps_every_byte(
        work_home: States, tmp_path: Path) -> None:
    # fault: the warehouse's folder (GPUCOST_WAREHOUSE) already holds a user's landing/ (before: the first ingest
    # deleted invoice.csv and the .part-backup folder, exit 0)
    folder = tmp_path / "warehouse-folder" / "landing"
    (folder / "2026-12").mkdir(parents=True)
    (folder / "2026-12" / "invoice.csv").write_text("invoice,usd\n1,100\n")
    (folder / ".part-backup").mkdir()
    (folder / ".part-backup" / "keep.txt").write_text("mine\n")
    before = tree_checksums(folder)
    env = {"GPUCOST_WAREHOUSE": str(folder.parent / "warehouse.duckdb")}
    returncode, stderr = gpucost(work_home, "ingest", "telemetry", str(TELEMETRY), env=env, timeout=120)
    assert returncode == 5, stderr[-3000:]
    assert_one_line(stderr, f"{folder} holds files the warehouse did not land (.part-backup/keep.txt and 1 more)",
                    "not a landing zone gpucost made", "nothing was written")
    no_prefect_errors(stderr)
    assert tree_checksums(folder) == before


def test_a_read_only_landing_folder_is_exit_2_in_one_line_and_nothing_is_registered_or_quarantined(
        work_home: States, tmp_path: Path) -> None:
    home = work_home.restore("base")
    landing = home / "landing"
    before = warehouse_checksums(home / "warehouse.duckdb"), tree_checksums(landing)
    aside = tmp_path / "landing"
    shutil.copytree(landing, aside)
    # fault: the landing folder read-only (before: the file quarantined whole, exit 1, the error said twice)
    if subprocess.run(["mount", "--bind", "-o", "ro", str(aside), str(landing)], capture_output=True).returncode \
            or subprocess.run(["mount", "-o", "remount,bind,ro", str(landing)], capture_output=True).returncode:
        pytest.skip("no read-only bind mount here")
    try:
        returncode, stderr = gpucost(work_home, "ingest", "prices", "--provider", "aws", "--format",
                                     "skypilot", str(PRICES / "skypilot_v8_aws_gpu_subset.csv"), timeout=120)
    finally:
        subprocess.run(["umount", str(landing)], check=False)
    assert returncode == 2, stderr[-3000:]
    assert_one_line(stderr, f"the landing folder {landing} is read-only", "nothing was ingested")
    no_prefect_errors(stderr)
    assert (warehouse_checksums(home / "warehouse.duckdb"), tree_checksums(landing)) == before


def test_a_truncated_landed_file_is_said_by_the_next_ingest_and_its_source_lands_it_again(
        prefect_harness, work_home: States) -> None:
    home = work_home.restore("base")
    landed, sha = landed_telemetry(home)
    tables_before = warehouse_checksums(home / "warehouse.duckdb")
    # fault: the landed copy of the sample telemetry cut to 100 bytes (before: unnoticed, read as 0 lines; the
    # same source said "already ingested" and did not land it again)
    landed.write_bytes(landed.read_bytes()[:100])
    returncode, stderr = gpucost(work_home, "ingest", "telemetry", timeout=180)  # the configured sources
    assert returncode == 0, stderr[-3000:]
    lines = stderr.splitlines()
    assert any(line.endswith(f"ingest telemetry: warning: landed file {sha[:12]}… damaged: {TELEMETRY.name}")
               for line in lines), stderr[-3000:]
    assert any("already ingested; its landed file was damaged" in line for line in lines), stderr[-3000:]
    assert landed_content_sha256(landed) == sha  # landed again from the original bytes
    assert warehouse_checksums(home / "warehouse.duckdb") == tables_before  # nothing stored twice


def test_retention_days_past_100_years_are_refused_at_the_door(work_home: States, tmp_path: Path) -> None:
    home = work_home.restore("base")
    config = shutil.copytree(work_home.config, tmp_path / "config")
    settings = config / "settings.toml"
    settings.write_text(settings.read_text().replace("[ingest]\n", "[ingest]\nlanding_retention_days = 1000000000\n"))
    before = warehouse_checksums(home / "warehouse.duckdb"), tree_checksums(home / "landing")
    # before: accepted, then every ingest ended in a 134-line OverflowError after its rows were stored
    returncode, stderr = gpucost(work_home, "ingest", "telemetry", str(TELEMETRY),
                                 env={"GPUCOST_CONFIG_DIR": str(config)}, timeout=120)
    assert returncode == 2, stderr[-3000:]
    assert_one_line(stderr, f"{settings}: ingest.landing_retention_days: must be <= 36500 (got 1000000000)")
    assert (warehouse_checksums(home / "warehouse.duckdb"), tree_checksums(home / "landing")) == before


def test_a_truncated_landed_file_is_found_by_the_next_run_which_lands_it_again(
        prefect_harness, work_home: States) -> None:
    home = work_home.restore("base")
    landed, sha = landed_telemetry(home)
    landed.write_bytes(landed.read_bytes()[:100])
    returncode, stderr = gpucost(work_home, "run", timeout=600)
    assert returncode == 0, stderr[-3000:]
    assert f"ingest telemetry: warning: landed file {sha[:12]}… damaged: {TELEMETRY.name}" in stderr
    assert landed_content_sha256(landed) == sha
