"""One retry policy for tasks that read files or stores: transient I/O errors (OSError) are retried
(`[prefect]` in config/settings.toml); anything else fails at once. No caching: inputs are connections
and frames, and every run must do the work."""

from __future__ import annotations

from typing import Any

from prefect.cache_policies import NO_CACHE

from tasks import config


def _raised_os_error(task: object, task_run: object, state: Any) -> bool:
    return isinstance(state.result(raise_on_failure=False), OSError)


def io_task_options(name: str) -> dict[str, Any]:
    """Keyword arguments for `@task(...)` of a task that touches files."""
    retry = config.settings().prefect
    return {
        "name": name,
        "retries": retry.task_retries,
        "retry_delay_seconds": retry.task_retry_delay_seconds,
        "retry_condition_fn": _raised_os_error,
        "cache_policy": NO_CACHE,
    }
