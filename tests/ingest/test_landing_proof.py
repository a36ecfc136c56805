"""The landing zone owns only what it made and every landed file proves itself (issue 41): a `landing/` gpucost did
not make is refused and keeps every byte; a missing, truncated, altered or swapped landed file is found, never read
as its unit's, and landed again by the next ingest of its source; a read-only landing folder is the machine's fault,
not the file's (neither registered nor quarantined)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from tasks.ingest.landing import LandedFileError, check_landed, landed_lines, landing_dir, recover
from tasks.ingest.registry import LandingNotWritable
from tasks.landing_zone import MARKER
from tasks.stores import ForeignTargetError
from tasks.telemetry.ingest import ingest_telemetry_file
from tests import configured
from tests.ingest.test_landing import A100, AT, GOOD
from tests.telemetry.helpers import SAMPLE, sample_rows


def ingest(con, path: Path):  # type: ignore[no-untyped-def]
    return ingest_telemetry_file(con, path, configured.aliases(), AT, **configured.telemetry_options())


def tree_checksums(folder: Path) -> dict[str, str]:
    """Every file under `folder` (relative path -> SHA-256 of its bytes)."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def registry_and_quarantine(con) -> tuple:  # type: ignore[no-untyped-def]
    return (con.sql("select count(*) from raw.ingested_files").fetchall()[0][0],
            con.sql("select count(*) from quarantine.rejected_files").fetchall()[0][0],
            con.sql("select count(*) from core.telemetry_runs").fetchall()[0][0])


def decompressed(path: Path) -> bytes:
    with pa.CompressedInputStream(pa.OSFile(str(path)), "zstd") as stream:
        return stream.read()


def test_a_landing_folder_gpucost_did_not_make_is_refused_and_keeps_every_byte(con) -> None:
    folder = landing_dir(con)
    # fault: the warehouse's folder already holds a user's `landing/` (before: the first ingest deleted the
    # invoice, one level down, and the whole `.part-*` folder)
    (folder / "2026-12").mkdir(parents=True)
    (folder / "2026-12" / "invoice.csv").write_text("invoice,usd\n1,100\n")
    (folder / ".part-backup").mkdir()
    (folder / ".part-backup" / "keep.txt").write_text("mine\n")
    (folder / f".part-{'e' * 32}").write_text("named like ours, still theirs\n")
    before = tree_checksums(folder)
    for attempt in (lambda: ingest(con, SAMPLE), lambda: recover(con)):
        with pytest.raises(ForeignTargetError) as refused:
            attempt()
        assert str(refused.value) == (
            f"{folder} holds files the warehouse did not land (.part-backup/keep.txt and 2 more) and no {MARKER}: "
            "it is not a landing zone gpucost made, so gpucost will not write into it or remove anything from it: "
            "move it aside (or point GPUCOST_WAREHOUSE at another folder); nothing was written")
    assert tree_checksums(folder) == before  # every byte kept, no marker written
    assert registry_and_quarantine(con) == (0, 0, 0)


def test_an_empty_folder_is_claimed_and_a_landing_from_before_the_marker_is_ours(con, tmp_path: Path) -> None:
    first = tmp_path / "first.csv"
    sample_rows(GOOD).write_csv(first)
    outcome = ingest(con, first)
    folder = landing_dir(con)
    assert (folder / MARKER).read_text(encoding="utf-8").startswith("gpucost landing zone")
    # a landing zone from before the marker: every file in it is one the registry names (and a crash's part file)
    (folder / MARKER).unlink()
    (folder / f".part-{'a' * 32}").write_bytes(b"a crash's")
    second = tmp_path / "second.csv"
    sample_rows(A100).write_csv(second)
    assert ingest(con, second).rows_loaded == 1
    assert (folder / MARKER).is_file() and (folder / outcome.landed_path).is_file()
    # the same, with a user's file in it: refused, nothing removed
    (folder / MARKER).unlink()
    (folder / "ab").mkdir(exist_ok=True)
    (folder / "ab" / "mine.txt").write_text("mine\n")
    before = tree_checksums(folder)
    with pytest.raises(ForeignTargetError, match=r"holds files the warehouse did not land \(ab/mine.txt\)"):
        recover(con)
    assert tree_checksums(folder) == before


@pytest.mark.parametrize("fault", ["deleted", "truncated", "flipped"])
def test_a_missing_or_damaged_landed_file_is_found_and_the_next_ingest_of_its_source_lands_it_again(
        con, fault: str) -> None:
    outcome = ingest(con, SAMPLE)
    folder = landing_dir(con)
    landed = folder / outcome.landed_path
    sha = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    line_2 = SAMPLE.read_text(encoding="utf-8").splitlines()[1]
    assert landed_lines(con, sha)[2] == line_2
    if fault == "deleted":
        landed.unlink()
    elif fault == "truncated":  # before: read as 0 lines
        landed.write_bytes(landed.read_bytes()[:100])
    else:  # before: read as altered lines
        data = bytearray(landed.read_bytes())
        data[len(data) // 2] ^= 0xFF
        landed.write_bytes(bytes(data))
    problems = check_landed(con, "telemetry")
    assert [(p.landed_path, p.source_file) for p in problems] == [(outcome.landed_path, str(SAMPLE))]
    assert problems[0].problem == "missing" if fault == "deleted" else problems[0].problem.startswith("damaged (")
    with pytest.raises(LandedFileError) as refused:
        landed_lines(con, sha)
    assert str(refused.value).startswith(f"landed file {landed} ({SAMPLE}) is {problems[0].problem}: its original "
                                         "lines cannot be read until the next ingest of it lands it again")
    # the next ingest of its source: already ingested (nothing stored twice), landed again, and it says so
    runs_before = con.sql("select count(*) from core.telemetry_runs").fetchall()
    again = ingest(con, SAMPLE)
    assert again.status == "already_ingested" and again.landed_again == problems[0].problem
    assert again.notes == [f"landed again from its original bytes: {outcome.landed_path} was {problems[0].problem}"]
    assert con.sql("select count(*) from core.telemetry_runs").fetchall() == runs_before
    assert decompressed(landed) == SAMPLE.read_bytes()
    assert check_landed(con, "telemetry") == []
    assert landed_lines(con, sha)[2] == line_2
    # a whole landed file is not written again
    mtime = landed.stat().st_mtime_ns
    assert ingest(con, SAMPLE).landed_again is None and landed.stat().st_mtime_ns == mtime


def test_a_landed_file_copied_over_another_is_never_read_as_its_unit(con, tmp_path: Path) -> None:
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    sample_rows(GOOD).write_csv(first)
    sample_rows(A100).write_csv(second)
    a, b = ingest(con, first), ingest(con, second)
    folder = landing_dir(con)
    # fault: b's landed file copied over a's (before: a's original line was b's run)
    shutil.copy(folder / b.landed_path, folder / a.landed_path)
    with pytest.raises(LandedFileError, match=rf"\({first}\) is damaged \(its bytes hash to {b.content_sha256[:12]}…, "
                                              rf"not the {a.content_sha256[:12]}… its name claims\)"):
        landed_lines(con, a.content_sha256)
    assert landed_lines(con, b.content_sha256)[2] == second.read_text(encoding="utf-8").splitlines()[1]
    assert ingest(con, first).landed_again is not None
    assert landed_lines(con, a.content_sha256)[2] == first.read_text(encoding="utf-8").splitlines()[1]


@pytest.mark.slow  # mounts a file system (starts `mount`)
def test_a_read_only_landing_folder_is_the_machines_fault_not_the_files(con, tmp_path: Path) -> None:
    folder = landing_dir(con)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text("gpucost landing zone\n")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)],
                             capture_output=True).returncode == 0
    if not mounted:
        pytest.skip("no read-only mount here")
    try:
        with pytest.raises(LandingNotWritable) as stopped:
            ingest(con, SAMPLE)
        # before: quarantined whole as if the file were bad, and registered
        assert str(stopped.value).startswith(f"the landing folder {folder} cannot be written (")
        assert "neither registered nor quarantined, the next run reads it again" in str(stopped.value)
        assert registry_and_quarantine(con) == (0, 0, 0)
    finally:
        subprocess.run(["umount", str(folder)], check=False)
    assert ingest(con, SAMPLE).rows_loaded == 326  # writable again: the same file is read, not skipped
