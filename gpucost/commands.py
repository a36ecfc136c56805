"""The command table: for each `gpucost` command, whether it runs under the supervisor, what is checked before
it starts (the environment, every config file, the stores its pre-flight looks at), and the exit codes it may
end with. The exit codes are named here, once (README "Exit codes"; tests/cli/test_command_table.py holds the
two against each other). Adding a command is a function in cli.py and a row here."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Literal


class Exit(IntEnum):
    """The exit codes of `gpucost`, each with the words README's table says it with."""

    DONE = 0
    FAILED = 1
    INPUT = 2          # an input, an option, a config file, an environment override or a missing extra
    LOCKED = 3
    BUSY = 4
    DAMAGED = 5
    DISK_FULL = 6
    SIGHUP = 129
    SIGINT = 130
    SIGKILL = 137
    SIGTERM = 143

    @property
    def readme(self) -> str:
        """What README's exit-code table says for this code (a phrase of its row)."""
        return README_PHRASES[self]


README_PHRASES = {
    Exit.DONE: "done",
    Exit.FAILED: "the step failed",
    Exit.INPUT: "a configuration error",
    Exit.LOCKED: "another nightly run holds",
    Exit.BUSY: "another process holds the warehouse",
    Exit.DAMAGED: "a store is damaged",
    Exit.DISK_FULL: "not enough free space",
    Exit.SIGHUP: "SIGHUP",
    Exit.SIGINT: "SIGINT",
    Exit.SIGKILL: "SIGKILL",
    Exit.SIGTERM: "SIGTERM",
}

# What a pre-flight problem (gpucost/preflight.py) exits with.
PROBLEM_EXITS = {"damaged": Exit.DAMAGED, "disk_full": Exit.DISK_FULL}

# A supervised command stopped by a signal or killed (gpucost/guard.py, gpucost/serve.py).
STOPPED = (Exit.SIGINT, Exit.SIGTERM, Exit.SIGHUP, Exit.SIGKILL)

Stores = Literal["none", "warehouse", "warehouse+mlflow", "night"]


@dataclass(frozen=True)
class Command:
    name: str
    supervised: bool  # runs in a process group of its own that Ctrl-C / SIGTERM stops whole (guard.py)
    checks_config: bool  # every config file validated before it starts (exit 2, one line)
    writes_home: bool  # GPUCOST_HOME must be writable even when it is the default ./.gpucost
    runs_flows: bool  # Prefect's console quieted to warnings; our progress lines say the rest (console.py)
    # pre-flight (guard.preflight): the warehouse; and the MLflow store; or what a night touches (the warehouse,
    # the published database and its targets, the MLflow store, the workloads)
    stores: Stores
    exits: tuple[Exit, ...]  # every code it may end with


_NIGHT_EXITS = (Exit.DONE, Exit.FAILED, Exit.INPUT, Exit.BUSY, Exit.DAMAGED, Exit.DISK_FULL, *STOPPED)

COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("run", supervised=True, checks_config=True, writes_home=True, runs_flows=True, stores="night",
            exits=(*_NIGHT_EXITS, Exit.LOCKED)),
    Command("ingest", supervised=True, checks_config=True, writes_home=True, runs_flows=True, stores="warehouse",
            exits=_NIGHT_EXITS),
    Command("train", supervised=True, checks_config=True, writes_home=True, runs_flows=True,
            stores="warehouse+mlflow", exits=_NIGHT_EXITS),
    Command("publish", supervised=True, checks_config=True, writes_home=True, runs_flows=True, stores="night",
            exits=_NIGHT_EXITS),
    Command("fetch", supervised=True, checks_config=True, writes_home=True, runs_flows=False, stores="none",
            exits=_NIGHT_EXITS),
    Command("serve", supervised=True, checks_config=True, writes_home=True, runs_flows=False, stores="night",
            exits=_NIGHT_EXITS),
    Command("predict", supervised=False, checks_config=True, writes_home=False, runs_flows=False, stores="none",
            exits=(Exit.DONE, Exit.FAILED, Exit.INPUT)),
    Command("workloads", supervised=False, checks_config=True, writes_home=False, runs_flows=False, stores="none",
            exits=(Exit.DONE, Exit.INPUT)),
    Command("sql", supervised=False, checks_config=False, writes_home=False, runs_flows=False, stores="none",
            exits=(Exit.DONE, Exit.FAILED, Exit.INPUT, Exit.BUSY, Exit.DAMAGED, Exit.SIGINT)),
    Command("report", supervised=False, checks_config=False, writes_home=True, runs_flows=False, stores="none",
            exits=(Exit.DONE, Exit.FAILED, Exit.INPUT)),
    Command("offers", supervised=False, checks_config=False, writes_home=False, runs_flows=False, stores="none",
            exits=(Exit.DONE, Exit.FAILED, Exit.INPUT)),
)}
