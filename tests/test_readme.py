"""The README and docs/ are the front door: their commands must work. This runs the nightly flow once (real
Prefect, real DuckDB, real MLflow, a reduced candidate set for speed) and then every `gpucost sql` example of the
README and docs/*.md against the published database (or the warehouse), through the real command line; every
other `gpucost` command line they show must parse against the real command line, every `make` target exist and
every link resolve."""

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
# docs/pending/ is where work in progress drops notes for the lead to fold in: not documentation yet
PAGES = {"README.md": README} | {
    f"docs/{page.name}": page.read_text(encoding="utf-8") for page in sorted((PROJECT_ROOT / "docs").glob("*.md"))
}
SQL_EXAMPLE = re.compile(r"^(?:\.venv/bin/)?gpucost sql (--warehouse )?(\".*\")\s*$")


def code_block_lines(text: str) -> list[str]:
    """The lines inside fenced code blocks, a console block's `$ ` prompt removed."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
        elif inside:
            lines.append(line.strip().removeprefix("$ "))
    return lines


def sql_examples() -> list[tuple[bool, str]]:
    """Every `gpucost sql [--warehouse] "..."` line in the README's and docs' code blocks: (warehouse?, query)."""
    found: list[tuple[bool, str]] = []
    for text in PAGES.values():
        for line in code_block_lines(text):
            match = SQL_EXAMPLE.match(line)
            if match and (bool(match.group(1)), shlex.split(match.group(2))[0]) not in found:
                found.append((bool(match.group(1)), shlex.split(match.group(2))[0]))
    return found


def readme_sql_examples() -> list[str]:
    """The published-database queries of the README and docs (tests/fetch runs the price_fetch_status one)."""
    return [query for warehouse, query in sql_examples() if not warehouse]


def inline_commands(text: str) -> list[str]:
    """`gpucost ...` in running text, except the synopses (`gpucost offers [--workload W …]`)."""
    return [span for span in re.findall(r"`(gpucost [^`]+)`", text) if not re.search(r"[\[…|]|\.\.\.|\bNAME\b", span)]


def command_lines() -> list[tuple[str, list[str], bool]]:
    """Every `gpucost ...` command line of the README and docs (code blocks and running text): (page,
    arguments, in running text?), with leading VAR=value assignments and trailing comments removed."""
    found = []
    for page, text in PAGES.items():
        lines = [(line, False) for line in code_block_lines(text)] + [(span, True) for span in inline_commands(text)]
        for line, in_text in lines:
            words = shlex.split(line, comments=True) if re.search(r"(^|\s|/)gpucost ", line) else []
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
                words = words[1:]
            if words and words[0] in ("gpucost", ".venv/bin/gpucost", "/opt/gpucost/.venv/bin/gpucost"):
                found.append((page, words[1:], in_text))
    return found


def gpucost(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUCOST_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "gpucost.cli", *args], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT,
        timeout=120,
    )


def test_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 250


def test_the_make_targets_named_exist() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    for page, text in PAGES.items():
        for target in re.findall(r"make ([a-z][a-z-]*)", text):
            assert re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE), f"{page} mentions make {target}"
    assert "make run" in README and "make test" in README and "make test-fast" in README


def test_make_test_runs_the_checks_first() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test: lint$", makefile, re.MULTILINE)
    lint = re.search(r"^lint:.*?(?=\n\n)", makefile, re.MULTILINE | re.DOTALL)
    assert lint is not None
    for check in ("/ruff check .", "/mypy", "/sqlfluff lint sql"):
        assert check in lint.group(0), check


def test_readme_lists_every_cli_subcommand() -> None:
    from gpucost.cli import app, ingest_app

    commands = {c.name or c.callback.__name__ for c in app.registered_commands}
    commands |= {f"ingest {c.name}" for c in ingest_app.registered_commands}
    for command in commands:
        assert f"`gpucost {command}" in README, f"README does not document `gpucost {command}`"


def test_every_command_line_shown_parses() -> None:
    """Each `gpucost ...` line of a code block names a real subcommand with options it has and values of the
    right type (click, as typer ships it, parses it as the command line would; nothing runs). In running text,
    where a command is named without its arguments (`gpucost predict`), the subcommand and options must exist."""
    import typer
    from typer.core import TyperGroup

    from gpucost.cli import app

    lines = command_lines()
    assert len(lines) >= 25  # the README's queries and offers, and the docs' train, predict, ingest, fetch, serve
    for page, args, in_text in lines:
        command = typer.main.get_command(app)
        ctx = command.make_context("gpucost", [], resilient_parsing=True)
        rest = list(args)
        while isinstance(command, TyperGroup):
            name, rest = (rest[0], rest[1:]) if rest else ("", [])
            command = command.get_command(ctx, name)
            assert command is not None, f"{page}: gpucost {shlex.join(args)}: no such command {name!r}"
            ctx = command.make_context(name, [], parent=ctx, resilient_parsing=True)
        try:
            command.make_context(ctx.info_name, rest, parent=ctx.parent, resilient_parsing=in_text).close()
        except Exception as error:  # click's usage errors (typer ships its own click)
            pytest.fail(f"{page}: gpucost {shlex.join(args)}: {getattr(error, 'format_message', error.__str__)()}")


def test_the_command_line_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    import tests.test_readme as this

    for wrong in (["offers", "--gpux", "H100"], ["offers", "--limit", "ten"], ["ingest", "pricez"], ["predict"]):
        monkeypatch.setattr(this, "command_lines", lambda wrong=wrong: [("README.md", wrong, False)] * 25)
        with pytest.raises((pytest.fail.Exception, AssertionError)):
            test_every_command_line_shown_parses()


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_pages_resolves() -> None:
    for page, text in PAGES.items():
        here = (PROJECT_ROOT / page).parent
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            path, _, fragment = target.partition("#")
            file = (here / path).resolve() if path else PROJECT_ROOT / page
            assert file.exists(), f"{page}: link to {target}: no such file"
            if fragment:
                headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.MULTILINE)
                assert fragment in {anchor(h) for h in headings}, f"{page}: link to {target}: no such heading"


@pytest.mark.flow
def test_nightly_then_every_readme_query_returns_rows(night: Night) -> None:
    # the session's nightly run through the real command line (tests/cli/conftest.py), shared with the CLI tests
    assert night.returncode == 0, night.stderr[-3000:]
    gpucost_home = night.home
    assert (gpucost_home / "published.duckdb").exists()
    assert (gpucost_home / "gpu_cost_ranking.png").exists()
    assert (gpucost_home / "report" / "index.html").exists()  # README "Browse tonight's offers"

    # price_fetch_status has rows only after a fetch: its query runs in tests/fetch (nightly with fetching).
    queries = [q for q in readme_sql_examples() if "price_fetch_status" not in q]
    assert len(queries) >= 6  # the quickstart query and the five useful ones
    for query in queries:
        done = gpucost("sql", "--csv", query, home=gpucost_home)
        assert done.returncode == 0, f"{query}\n{done.stderr}"
        rows = [line for line in done.stdout.splitlines() if line.strip()]
        assert len(rows) >= 2, f"no rows for README query: {query}"  # header + at least one row
    # the warehouse's: runs read from MLflow (none in the bundled night: the header alone)
    warehouse_queries = [query for warehouse, query in sql_examples() if warehouse]
    assert warehouse_queries
    for query in warehouse_queries:
        done = gpucost("sql", "--warehouse", "--csv", query, home=gpucost_home)
        assert done.returncode == 0, f"{query}\n{done.stderr}"
        assert done.stdout.splitlines()[0] == "run_id,gpu,num_gpus,tokens_per_sec_per_gpu,avg_power_w"

    # Read-only: a write is refused with a reason on stderr and a non-zero exit.
    refused = gpucost("sql", "drop table gpu_cost_ranking", home=gpucost_home)
    assert refused.returncode != 0 and "read-only" in refused.stderr.lower()


def test_every_warehouse_table_named_exists(con) -> None:  # the migrated warehouse (tests/conftest.py)
    tables = {f"{schema}.{name}" for schema, name in con.execute(
        "select table_schema, table_name from information_schema.tables").fetchall()}
    # and the tables a step builds when it runs (features.training_runs by the telemetry ingest)
    for sql in (PROJECT_ROOT / "sql").rglob("*.sql"):
        tables |= set(re.findall(r"create (?:or replace )?table ([a-z_]+\.[a-z_]+)", sql.read_text(encoding="utf-8")))
    for page, text in PAGES.items():
        for name in set(re.findall(r"`((?:raw|core|features|quarantine|marts)\.[a-z_]+)", text)):
            assert name in tables, f"{page} names {name}: no such table or view in a migrated warehouse"


def test_every_project_file_named_exists() -> None:
    made_by_a_run = {"bench/results/work/"}  # make bench's work files
    for page, text in PAGES.items():
        for path in set(re.findall(r"`((?:tasks|flows|sql|config|data|expectations|tests|bench|docs)/[^`*…<>{} ]+)`",
                                   text)) - made_by_a_run:
            assert (PROJECT_ROOT / path.split(":")[0].rstrip("/")).exists(), f"{page} names {path}: no such file"
