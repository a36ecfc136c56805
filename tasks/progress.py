"""Progress of long steps as plain log records on the `gpucost.progress` logger (no Prefect, no terminal code).

Tasks say what they are doing (`step(...)` for lines worth keeping, `tick(...)` for fine-grained ones such as a
cross-validation fold); whoever runs them decides how to show it: the CLI prints steps as lines and shows
ticks only on a terminal (gpucost/console.py); Prefect and tests just get log records."""

from __future__ import annotations

import logging

log = logging.getLogger("gpucost.progress")

TRANSIENT = "transient"  # LogRecord attribute: True for ticks (overwritten on a terminal, dropped in logs)


def step(message: str, *args: object) -> None:
    """A line worth keeping in a log: file i of n done, candidate i of n started."""
    log.info(message, *args, extra={TRANSIENT: False})


def tick(message: str, *args: object) -> None:
    """A fine-grained update (fold j of k): shown on a terminal, never written to a log."""
    log.debug(message, *args, extra={TRANSIENT: True})
