"""A bad night, part 2: damaged stores, a full disk, bad workload configs and `gpucost sql` escapes.

Every case runs the real `gpucost` command on a copy of the base state (a published night, a champion) and
checks the one line it says, its exit code, that what users read (published.duckdb) is byte-identical
afterwards, and that no process of the command is left running."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import duckdb
import pytest

from tasks import config_files
from tests import configured
from tests.reliability.conftest import States
from tests.reliability.helpers import GPUCOST, assert_one_line, processes_of, whole_file_violations


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


last_stdout = [""]


def gpucost(states: States, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
            preexec_fn: object = None) -> tuple[int, str]:
    """The real command on the shared state folder; (exit code, stderr)."""
    from prefect.settings import PREFECT_API_URL

    environment = {**os.environ, "GPUCOST_HOME": str(states.work), "GPUCOST_CONFIG_DIR": str(states.config),
                   "PREFECT_API_URL": str(PREFECT_API_URL.value() or ""), **(env or {})}
    if not environment["PREFECT_API_URL"]:
        environment.pop("PREFECT_API_URL")
    already = set(processes_of(states.work))  # the session's Prefect test server, started by this process
    done = subprocess.run([str(GPUCOST), *args], env=environment, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=preexec_fn)  # type: ignore[arg-type]
    assert set(processes_of(states.work)) - already == set()  # nothing of the command is left running
    last_stdout[0] = done.stdout
    return done.returncode, done.stderr


def overwrite(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


# DuckDB files: a 4 KiB main header, two 4 KiB database headers, then 256 KiB blocks, each starting with its
# checksum. 64 bytes inside the 2nd and 3rd blocks: data the first queries of a night do not read.
def damage_blocks(path: Path) -> None:
    for block in (1, 2):
        overwrite(path, 3 * 4096 + block * 262144 + 100, b"\xff" * 64)


def damage_header(path: Path) -> None:
    overwrite(path, 0, b"\x00" * 64)


def truncate(path: Path) -> None:
    path.write_bytes(b"")


DAMAGED = [
    # (file, damage, command, exit code, fragments of the one line)
    ("warehouse.duckdb", damage_blocks, ["run"], 5,
     ["is damaged", "Corrupt database file", "restore it from a backup"]),
    ("warehouse.duckdb", damage_header, ["publish"], 5, ["is not a DuckDB database", "restore it from a backup"]),
    ("warehouse.duckdb", truncate, ["ingest", "prices"], 5, ["is empty (0 bytes)", "restore it from a backup"]),
    ("warehouse.duckdb", damage_blocks, ["sql", "--warehouse", "select 1"], 5, ["is damaged"]),
    ("published.duckdb", damage_header, ["sql", "select 1"], 5,
     ["is not a DuckDB database", "run `gpucost publish` to rebuild it"]),
    ("published.duckdb", truncate, ["sql", "select 1"], 5, ["is empty (0 bytes)", "run `gpucost publish`"]),
    ("mlflow/mlflow.db", damage_header, ["train"], 5,
     ["MLflow store", "is not an SQLite database", "training is skipped"]),
]


@pytest.mark.parametrize(("name", "damage", "command", "code", "fragments"), DAMAGED,
                         ids=[f"{d[0]}-{d[1].__name__}-{d[2][0]}" for d in DAMAGED])
def test_a_damaged_store_is_named_before_any_work_starts(prefect_harness, work_home: States, name: str, damage,
                                                         command: list[str], code: int, fragments: list[str]) -> None:
    home = work_home.restore("base")
    damage(home / name)
    before = {f: digest(home / f) for f in ("published.duckdb", "warehouse.duckdb", "mlflow/mlflow.db")}
    returncode, stderr = gpucost(work_home, *command)
    assert returncode == code, stderr[-3000:]
    assert_one_line(stderr, str(home / name), *fragments)
    assert "Flow run" not in stderr and "Starting temporary server" not in stderr  # before any work
    assert {f: digest(home / f) for f in before} == before  # nothing changed, the damaged file included


def fresh_prices_config(states: States, tmp_path: Path) -> dict[str, str]:
    """The base state's prices were observed on driver.INGESTED_AT and tonight is the real date: widen the
    stale-price limit so that tonight's rows are about the model, not the prices' age."""
    config = shutil.copytree(states.config, tmp_path / "config")
    ranking = config / "ranking.toml"
    ranking.write_text(re.sub(r"max_price_age_days = \d+", "max_price_age_days = 36500", ranking.read_text()))
    return {"GPUCOST_CONFIG_DIR": str(config)}


def test_a_damaged_mlflow_store_skips_training_and_the_night_still_publishes(prefect_harness, work_home: States,
                                                                             tmp_path: Path) -> None:
    """The README's promise for an unavailable store: training skipped with one line, publish runs, every row
    says why it has no model. The published file is damaged too: the night rebuilds it."""
    home = work_home.restore("base")
    overwrite(home / "mlflow" / "mlflow.db", 0, b"\x00" * 64)
    damage_header(home / "published.duckdb")
    mlflow_before = digest(home / "mlflow" / "mlflow.db")
    returncode, stderr = gpucost(work_home, "run", env=fresh_prices_config(work_home, tmp_path))
    assert returncode == 0, stderr[-3000:]
    said = stderr + last_stdout[0]
    # the summary's lines wrap at 100 columns: compare with white space folded
    assert f"train: skipped (the MLflow store {home / 'mlflow' / 'mlflow.db'} is damaged" in " ".join(said.split()), \
        said[-3000:]
    assert "publish: completed" in said and "model none" in said
    assert "Traceback" not in stderr
    warnings = [line for line in stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and "published database" in warnings[0] and "MLflow store" in warnings[1], warnings
    with duckdb.connect(str(home / "published.duckdb"), read_only=True) as con:  # rebuilt, readable
        rows, unranked, with_model, no_model = con.sql(
            "select count(*), count(*) filter (where rank_by_cost is null and not_ranked_reason is not null), "
            "count(model_version), count(*) filter (where not_ranked_reason like 'no loadable champion model%') "
            "from gpu_cost_ranking").fetchall()[0]
        versions = con.sql("select count(*) from model_versions").fetchall()[0][0]
    # every row is there and says why it is not ranked: no model, unless an earlier check (does not fit, no
    # spec row) already ruled the offer out
    assert rows > 0 and unranked == rows and with_model == 0 and no_model > 0 and versions == 0
    assert digest(home / "mlflow" / "mlflow.db") == mlflow_before  # training never touched it


def test_publish_alone_with_a_damaged_mlflow_store_ranks_with_no_model(prefect_harness, work_home: States) -> None:
    home = work_home.restore("base")
    overwrite(home / "mlflow" / "mlflow.db", 0, b"\x00" * 64)
    returncode, stderr = gpucost(work_home, "publish")
    assert returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    assert [line for line in stderr.splitlines() if line.startswith("warning:")] == [
        line for line in stderr.splitlines() if line.startswith("warning: the MLflow store")]


# ---------------------------------------------------------------------------------------------- disk full

def mount_small_tmpfs(at: Path, size_bytes: int) -> bool:
    """A tmpfs of `size_bytes` at `at` (root only); False where mounting is not allowed."""
    at.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(at)],
                          capture_output=True)
    return done.returncode == 0


@pytest.fixture
def small_disk(work_home: States, tmp_path: Path):
    """The base state on a disk with `room` bytes left: a tmpfs at the state folder (MLflow keeps absolute
    paths) when mount works here, else None (the test then limits file sizes with RLIMIT_FSIZE)."""
    mounted: list[Path] = []

    def make(room: int) -> bool:
        home = work_home.restore("base")
        # what the copy takes on a tmpfs: whole 4 KiB pages per file (the model's code travels as many small files)
        used = sum(-(-p.stat().st_size // 4096) * 4096 for p in home.rglob("*") if p.is_file())
        aside = tmp_path / "aside"
        shutil.move(home, aside)
        if not mount_small_tmpfs(home, used + room):
            shutil.move(aside, home)
            return False
        mounted.append(home)
        for item in aside.iterdir():
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, home / item.name)
        return True

    yield make
    for at in mounted:
        subprocess.run(["umount", str(at)], check=True)


def write_settings(states: States, tmp_path: Path, min_free_mb: float) -> dict[str, str]:
    config = shutil.copytree(states.config, tmp_path / "config")
    settings = config / "settings.toml"
    settings.write_text(re.sub(r"min_free_mb = \d+", f"min_free_mb = {min_free_mb}", settings.read_text()))
    return {"GPUCOST_CONFIG_DIR": str(config)}


def test_too_little_free_space_is_refused_before_any_work(prefect_harness, work_home: States, small_disk,
                                                          tmp_path: Path) -> None:
    home = work_home.work
    if small_disk(8 * 1024 * 1024):  # 8 MB left on the tmpfs, below the default 256 MB minimum
        env = None
        fragments = ["only 8 MB free under", "at least 256 MB"]
    else:  # no mount here: a minimum above what this disk has
        env = write_settings(work_home, tmp_path, 10**9)
        fragments = ["MB free under", "at least 1000000000 MB"]
    before = digest(home / "published.duckdb")
    returncode, stderr = gpucost(work_home, "publish", env=env)
    assert returncode == 6, stderr[-3000:]
    assert_one_line(stderr, str(home), *fragments, "nothing was changed")
    assert digest(home / "published.duckdb") == before


def test_a_disk_that_fills_during_publish_gives_one_line_and_the_previous_night_stays(
        prefect_harness, work_home: States, small_disk, tmp_path: Path) -> None:
    home = work_home.work
    env = write_settings(work_home, tmp_path, 0)  # let it start: the disk fills while publish writes
    preexec = None
    if not small_disk(512 * 1024):  # 0.5 MB left: less than one new published file
        def preexec() -> None:  # no mount here: any file over 1 MB cannot grow (EFBIG instead of ENOSPC)
            import resource
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1024 * 1024, 1024 * 1024))
    before = digest(home / "published.duckdb")
    returncode, stderr = gpucost(work_home, "publish", env=env, preexec_fn=preexec)
    assert returncode == 6, stderr[-3000:]
    assert_one_line(stderr, "no space left on device", str(home), "the previous results are still published")
    assert digest(home / "published.duckdb") == before
    assert not list(home.glob(".published.duckdb.*"))  # no half-written file left beside it
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        assert whole_file_violations(con) == []


# -------------------------------------------------------------------------------------- workload configs

BAD_WORKLOADS = [
    ("token_budget", "-1e12", "token_budget = -1000000000000.0: Input should be greater than 0"),
    ("token_budget", "0", "token_budget = 0: Input should be greater than 0"),
    ("token_budget", "nan", "token_budget = nan: Input should be a finite number"),
    ("params_b", "7e12", "params_b = 7000000000000.0: Input should be less than or equal to 100000"),
    ("seq_len", "1_000_000_000", "seq_len = 1000000000: Input should be less than or equal to 100000000"),
    ("precision", '"fp3"', "precision fp3 is unknown"),
    ("deadline_hours", "0", "deadline_hours = 0: Input should be greater than 0"),
    ("deadline_hours", "-24", "deadline_hours = -24: Input should be greater than 0"),
    ("max_gpus", '"8"', "max_gpus = '8': Input should be a valid integer"),
    ("tokens_budget", "1e9", "tokens_budget is not a workload key"),
]


def workloads_config(states: States, tmp_path: Path, text: str) -> dict[str, str]:
    config = shutil.copytree(states.config, tmp_path / "config")
    (config / "workloads.toml").write_text(text, encoding="utf-8")
    return {"GPUCOST_CONFIG_DIR": str(config)}


def with_key(text: str, workload: str, key: str, value: str) -> str:
    """The workloads file with `key = value` set in the [[workloads]] entry named `workload`."""
    head, _, rest = text.partition(f'name = "{workload}"')
    body, sep, tail = rest.partition("[[workloads]]")
    body = re.sub(rf"(?m)^{key} = .*\n", "", body)
    return f'{head}name = "{workload}"\n{key} = {value}{body}{sep}{tail}'


def test_every_bad_workload_key_is_named_by_file_workload_and_key(work_home: States, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked by the typed model in one process (fast); the command-level cases follow."""
    from tasks.ranking.workloads import WorkloadConfigError, load_workloads

    text = (work_home.config / "workloads.toml").read_text(encoding="utf-8")
    for key, value, expected in BAD_WORKLOADS:
        env = workloads_config(work_home, tmp_path / key / value.strip('"'),
                               with_key(text, "70b-pretrain-200b", key, value))
        monkeypatch.setenv("GPUCOST_CONFIG_DIR", env["GPUCOST_CONFIG_DIR"])
        with pytest.raises(WorkloadConfigError) as raised:
            load_workloads(config_files.workloads(), config_files.ranking())
        message = str(raised.value)
        assert message.startswith(f"{env['GPUCOST_CONFIG_DIR']}/workloads.toml: workload 70b-pretrain-200b: ")
        assert expected in message, message


@pytest.mark.parametrize(("text", "fragments"), [
    ("", ["defines no [[workloads]]", "the previous night stays served"]),
    ("# every workload commented out\n", ["defines no [[workloads]]"]),
    (None, ["workload 7b-pretrain-1t: token_budget = -1000000000000.0: Input should be greater than 0"]),
], ids=["empty", "comments-only", "negative-token-budget"])
def test_a_bad_workloads_file_fails_publish_and_run_and_nothing_served_changes(
        prefect_harness, work_home: States, tmp_path: Path, text: str | None, fragments: list[str]) -> None:
    home = work_home.restore("base")
    if text is None:
        original = (work_home.config / "workloads.toml").read_text(encoding="utf-8")
        text = with_key(original, "7b-pretrain-1t", "token_budget", "-1e12")
    env = workloads_config(work_home, tmp_path, text)
    before = digest(home / "published.duckdb"), digest(home / "warehouse.duckdb")
    for command in ("publish", "run"):
        returncode, stderr = gpucost(work_home, command, env=env)
        assert returncode == 2, stderr[-3000:]
        assert_one_line(stderr, f"{tmp_path}/config/workloads.toml", *fragments)
        assert "Flow run" not in stderr  # refused before any work
    assert (digest(home / "published.duckdb"), digest(home / "warehouse.duckdb")) == before


def test_no_offers_at_all_fails_the_step_and_the_previous_night_stays(work_home: States) -> None:
    from datetime import UTC, datetime

    from tasks.publishing.night import publish_night
    from tasks.ranking.rank import NoOffersError
    from tasks.warehouse import warehouse
    from tests.reliability import driver

    home = work_home.restore("base")
    before = digest(home / "published.duckdb")
    with warehouse(configured.resources().warehouse) as con:
        con.execute("delete from core.price_observations")
        history = con.sql("select count(*) from marts.gpu_cost_ranking_history").fetchall()
        with pytest.raises(NoOffersError, match="no current price offer"):
            publish_night(con, None, driver.FIRST_NIGHT, datetime.now(UTC), configured.resources(),
                          **configured.night())
        assert con.sql("select count(*) from marts.gpu_cost_ranking_history").fetchall() == history
    assert digest(home / "published.duckdb") == before


def test_a_workload_that_loses_every_ranked_row_is_said_loudly(work_home: States, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Night 1 ranks 8b-qlora-100m; on night 2 its providers list names no provider with offers."""
    from datetime import UTC, datetime

    from tasks.model.predict import load_champion
    from tasks.publishing.night import publish_night
    from tasks.warehouse import warehouse
    from tests.reliability import driver

    work_home.restore("base")
    champion = load_champion(configured.resources().tracking_uri, configured.contract())
    original = (work_home.config / "workloads.toml").read_text(encoding="utf-8")
    env = workloads_config(work_home, tmp_path, with_key(original, "8b-qlora-100m", "providers", '["nowhere"]'))
    with warehouse(configured.resources().warehouse) as con:
        first = publish_night(con, champion, driver.FIRST_NIGHT, datetime.now(UTC), configured.resources(),
                              **configured.night())
        assert first.ranking.warnings == [] and first.ranking.ranked > 0
        monkeypatch.setenv("GPUCOST_CONFIG_DIR", env["GPUCOST_CONFIG_DIR"])
        second = publish_night(con, champion, driver.NEXT_NIGHT, datetime.now(UTC), configured.resources(),
                               **configured.night())
        ranked = dict(con.sql("select workload, count(rank_by_cost) from marts.gpu_cost_ranking_history "
                              "where publish_date = $d group by all", params={"d": driver.FIRST_NIGHT}).fetchall())
    assert ranked["8b-qlora-100m"] > 0
    assert second.ranking.warnings == [
        f"WARNING: workload 8b-qlora-100m had {ranked['8b-qlora-100m']} ranked offers on {driver.FIRST_NIGHT} and "
        "has none tonight (see not_ranked_reason in gpu_cost_ranking)"]
    assert f"**{second.ranking.warnings[0]}**" in second.markdown
