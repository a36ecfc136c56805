"""The landing zone (tasks/ingest/landing.py): every ingested file kept once, by content hash, zstd, atomically,
registered with its rows; a crash's leftovers recovered; retention never removes a file a row refers to."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa

from tasks.ingest.landing import PART_PREFIX, landed_lines, landing_dir, prune, recover
from tasks.telemetry.ingest import ingest_telemetry_file
from tests import configured
from tests.telemetry.helpers import SAMPLE, sample_rows

AT = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
GOOD = "llm-foundry-d8cd8403c5"   # sample line 2: MPT-70b on 512 H100-SXM
A100 = "llm-foundry-214423f80b"   # sample line 79: MPT-70b on 64 A100-80GB


def _decompressed(path: Path) -> bytes:
    with pa.CompressedInputStream(pa.OSFile(str(path)), "zstd") as stream:
        return stream.read()


def test_a_file_lands_once_by_its_hash_compressed_and_registered(con, tmp_path: Path) -> None:
    outcome = ingest_telemetry_file(con, SAMPLE, configured.aliases(), AT, **configured.telemetry_options())
    sha = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    folder = landing_dir(con)
    assert folder == Path(con.sql("select path from duckdb_databases() where database_name = current_database()")
                          .fetchall()[0][0]).parent / "landing"
    assert outcome.landed_path == f"{sha[:2]}/{sha}.csv.zst"
    landed = folder / outcome.landed_path
    # the landed bytes are the file's bytes, compressed: smaller than the input
    assert _decompressed(landed) == SAMPLE.read_bytes()
    assert landed.stat().st_size < SAMPLE.stat().st_size
    assert con.sql("select landed_path from raw.ingested_files").fetchall() == [(outcome.landed_path,)]
    # the same bytes under another name: already ingested, nothing new lands
    copy = tmp_path / "copy.csv"
    copy.write_bytes(SAMPLE.read_bytes())
    assert ingest_telemetry_file(con, copy, configured.aliases(), AT,
                                 **configured.telemetry_options()).status == "already_ingested"
    assert [p.name for p in folder.glob("*/*")] == [landed.name]
    assert list(folder.glob(f"{PART_PREFIX}*")) == []  # the copy read for its hash was not kept


def test_the_documented_query_gives_the_original_line_of_every_core_and_quarantined_row(con) -> None:
    ingest_telemetry_file(con, SAMPLE, configured.aliases(), AT, **configured.telemetry_options())
    original = SAMPLE.read_text(encoding="utf-8").splitlines()
    runs = con.sql("select content_sha256, source_line from core.telemetry_runs").fetchall()
    rejected = con.sql("select content_sha256, source_line from quarantine.rejected_rows").fetchall()
    # the sample's 336 records: 326 stored, 10 quarantined (OLMo-core rows without num_gpus, lines 274-283)
    assert (len(runs), len(rejected)) == (326, 10)
    lines = landed_lines(con, runs[0][0])
    for _, line in runs + rejected:
        assert lines[line] == original[line - 1]


def test_recovery_removes_what_a_crash_left_and_keeps_registered_files(con, tmp_path: Path) -> None:
    outcome = ingest_telemetry_file(con, SAMPLE, configured.aliases(), AT, **configured.telemetry_options())
    folder = landing_dir(con)
    # fault: a file landed by an ingest killed before its commit (no registry row), and a cut part file
    orphan = folder / "ab" / ("ab" + "0" * 62 + ".csv.zst")
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"landed, never registered")
    part = folder / "ab" / f"{PART_PREFIX}{'c' * 32}"
    part.write_bytes(b"half a file")
    read = folder / f"{PART_PREFIX}{'d' * 32}"  # a file read (hashed) by an ingest killed before the registry check
    read.write_bytes(b"a whole file, never landed")
    # names the landing zone never gives: a user's, left alone
    theirs = [folder / f"{PART_PREFIX}theirs", folder / "ab" / "notes.txt", folder / "ab" / f"{PART_PREFIX}x"]
    for path in theirs:
        path.write_bytes(b"a user's")
    assert sorted(recover(con)) == sorted([orphan, part, read])
    assert sorted(p.relative_to(folder).as_posix() for p in folder.glob("*/*")) == sorted(
        [outcome.landed_path, "ab/notes.txt", f"ab/{PART_PREFIX}x"])
    assert all(path.read_bytes() == b"a user's" for path in theirs)


def test_retention_removes_only_landed_files_no_row_refers_to(con, tmp_path: Path) -> None:
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    sample_rows(GOOD).write_csv(first)
    sample_rows(A100).write_csv(second)
    kept = ingest_telemetry_file(con, first, configured.aliases(), AT, **configured.telemetry_options())
    gone = ingest_telemetry_file(con, second, configured.aliases(), AT, **configured.telemetry_options())
    assert (kept.rows_loaded, gone.rows_loaded) == (1, 1)
    folder = landing_dir(con)
    # fault: the second file's one run deleted by hand, so no row refers to its landed file any more
    con.execute("delete from core.telemetry_runs where run_id = ?", [A100])
    # not yet old enough: nothing removed
    assert prune(con, before=AT) == []
    assert prune(con, before=AT + timedelta(days=1)) == [gone.landed_path]
    assert not (folder / gone.landed_path).exists() and (folder / kept.landed_path).exists()
    # the registry row stays (the same bytes are not ingested again), without a landed file
    assert con.sql("select source_file, landed_path from raw.ingested_files order by source_file").fetchall() == [
        (str(first), kept.landed_path), (str(second), None)]


def test_the_query_in_the_docs_shows_a_runs_original_line(con) -> None:
    ingest_telemetry_file(con, SAMPLE, configured.aliases(), AT, **configured.telemetry_options())
    docs = (Path(__file__).parents[2] / "docs" / "data-contracts.md").read_text(encoding="utf-8")
    block = docs.split("<!-- original-line-query -->\n```sql\n", 1)[1].split("```", 1)[0]
    home = landing_dir(con).parent
    set_variable, select = [s for s in block.replace("'.gpucost/", f"'{home}/").split(";") if s.strip()]
    con.execute(set_variable)
    # llm-foundry-d8cd8403c5 is the sample's line 2 (the header is line 1), as the file holds it
    assert con.sql(select).fetchall() == [(2, SAMPLE.read_text(encoding="utf-8").splitlines()[1])]
