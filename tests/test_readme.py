"""The README is the front door: its commands must work. This runs the nightly flow once (real Prefect,
real DuckDB, real MLflow, a reduced candidate set for speed) and then every `gpucost sql` example of the
README against the published database, through the real command line."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.settings import PROJECT_ROOT
from tests.cli.night import Night

README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")


def readme_sql_examples() -> list[str]:
    """Every `gpucost sql "..."` line in the README's code blocks (the query is the quoted argument)."""
    queries = []
    for line in README.splitlines():
        match = re.match(r"^(?:\.venv/bin/)?gpucost sql (\".*\")\s*$", line.strip())
        if match:
            queries.append(shlex.split(match.group(1))[0])
    return queries


def gpucost(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUCOST_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT,
        timeout=120,
    )


def test_readme_names_the_two_commands_and_the_make_targets_exist() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    for target in re.findall(r"make ([a-z-]+)", README):
        assert re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE), f"README mentions make {target}"
    assert "make run" in README and "make test" in README


def test_readme_lists_every_cli_subcommand() -> None:
    from flows.cli import app, ingest_app

    commands = {c.name or c.callback.__name__ for c in app.registered_commands}
    commands |= {f"ingest {c.name}" for c in ingest_app.registered_commands}
    for command in commands:
        assert f"`gpucost {command}" in README, f"README does not document `gpucost {command}`"


@pytest.mark.flow
def test_nightly_then_every_readme_query_returns_rows(night: Night) -> None:
    # the session's nightly run through the real command line (tests/cli/conftest.py), shared with the CLI tests
    assert night.returncode == 0, night.stderr[-3000:]
    gpucost_home = night.home
    assert (gpucost_home / "published.duckdb").exists()
    assert (gpucost_home / "gpu_cost_ranking.png").exists()

    # price_fetch_status has rows only after a fetch: its README query runs in tests/fetch (nightly with fetching).
    queries = [q for q in readme_sql_examples() if "price_fetch_status" not in q]
    assert len(queries) >= 6  # the quickstart query and the five useful ones
    for query in queries:
        done = gpucost("sql", "--csv", query, home=gpucost_home)
        assert done.returncode == 0, f"{query}\n{done.stderr}"
        rows = [line for line in done.stdout.splitlines() if line.strip()]
        assert len(rows) >= 2, f"no rows for README query: {query}"  # header + at least one row

    # Read-only: a write is refused with a reason on stderr and a non-zero exit.
    refused = gpucost("sql", "drop table gpu_cost_ranking", home=gpucost_home)
    assert refused.returncode != 0 and "read-only" in refused.stderr.lower()
