"""One retry policy for tasks that read files or stores: transient I/O errors (OSError) are retried
(`[prefect]` in config/settings.toml, applied by the flow that loaded it); anything else fails at once. No
caching: inputs are connections and frames, and every run must do the work."""

from __future__ import annotations

from typing import Any, ParamSpec, TypeVar

from prefect.cache_policies import NO_CACHE
from prefect.tasks import Task

from tasks.config_files import PrefectRetries

P = ParamSpec("P")
R = TypeVar("R")


def _raised_os_error(task: object, task_run: object, state: Any) -> bool:
    return isinstance(state.result(raise_on_failure=False), OSError)


def io_task_options(name: str) -> dict[str, Any]:
    """Keyword arguments for `@task(...)` of a task that touches files (how often it is retried: `with_retries`)."""
    return {"name": name, "retry_condition_fn": _raised_os_error, "cache_policy": NO_CACHE}


def with_retries(task: Task[P, R], retry: PrefectRetries) -> Task[P, R]:
    """`task` retried as config/settings.toml [prefect] says (read by the flow, not at import)."""
    return task.with_options(retries=retry.task_retries, retry_delay_seconds=retry.task_retry_delay_seconds)
