"""The command table (gpucost/commands.py) against the command line it describes and README's exit-code table:
every command is built from the Typer app, named in the table, and ends only with codes README explains."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from typing import Any

import typer
from typer.testing import CliRunner

from gpucost.cli import app, check_readable, check_warehouse_not_busy, resources
from gpucost.commands import COMMANDS, PROBLEM_EXITS, STOPPED, Exit
from gpucost.guard import guarded
from tasks.settings import PROJECT_ROOT

# What a helper called by a command may end it with (gpucost/guard.py's `guarded`, the checks in cli.py).
HELPERS = {
    "guarded": {Exit.INPUT, Exit.FAILED, Exit.BUSY, Exit.DAMAGED, Exit.DISK_FULL},
    "check_readable": {Exit.INPUT},
    "check_warehouse_not_busy": {Exit.BUSY},
    "resources": {Exit.INPUT},
}


def codes_used(function: Any) -> set[Exit]:
    """The exit codes a command's function names: `fail(message)` is FAILED, `fail(message, Exit.X)` and
    `typer.Exit(Exit.X)` are X, and a helper above adds its own."""
    used: set[Exit] = set()
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(function)))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Exit":
            used.add(Exit[node.attr])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "fail" and len(node.args) < 2:
                used.add(Exit.FAILED)
            used |= HELPERS.get(node.func.id, set())
    return used


def readme_exit_codes() -> dict[int, str]:
    """README's "Exit codes" table: code -> meaning (a row may name several codes: `130, 143, 129`)."""
    text = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    codes: dict[int, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and re.fullmatch(r"\d+(, \d+)*", cells[0]):
            for code in cells[0].split(", "):
                codes[int(code)] = cells[1]
    return codes


def built_commands() -> dict[str, Any]:
    """The click commands Typer builds from the app (typer ships its own click: no isinstance against ours)."""
    return dict(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def callbacks(command: Any) -> list[Any]:
    """The Python functions behind a command (both of `ingest`'s subcommands)."""
    if hasattr(command, "commands"):
        return [c.callback for c in command.commands.values()]
    return [command.callback]


def test_every_exit_code_is_readmes_and_readme_has_no_other() -> None:
    readme = readme_exit_codes()
    assert sorted(readme) == sorted(int(e) for e in Exit)
    for code in Exit:
        assert code.readme in readme[code], (code, readme[code])


def test_every_command_of_the_cli_is_in_the_table_and_builds() -> None:
    commands = built_commands()
    assert sorted(commands) == sorted(COMMANDS)
    runner = CliRunner()
    for name in commands:
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == Exit.DONE, (name, result.output)


def test_each_command_ends_only_with_the_codes_its_row_declares() -> None:
    for name, command in built_commands().items():
        declared = set(COMMANDS[name].exits)
        assert Exit.DONE in declared
        for callback in callbacks(command):
            used = codes_used(callback)
            assert used <= declared, (name, sorted(used - declared))
        if COMMANDS[name].supervised:  # the supervisor's stop line and exit code (gpucost/guard.py)
            assert set(STOPPED) <= declared, name


def test_the_helpers_end_with_the_codes_counted_for_them() -> None:
    # a helper's own codes, read the same way: HELPERS stays true when one of them changes
    assert codes_used(check_readable) == HELPERS["check_readable"]
    assert codes_used(check_warehouse_not_busy) == HELPERS["check_warehouse_not_busy"]
    assert codes_used(resources) == HELPERS["resources"]
    # `guarded` ends a pre-flight problem with its kind's code (PROBLEM_EXITS), the rest by name
    assert codes_used(guarded.__wrapped__) | set(PROBLEM_EXITS.values()) == HELPERS["guarded"]
