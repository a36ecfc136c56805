"""Prefect flows: composition only (which tasks, in which order, with which retries).

Prefect reads its settings at import, so the state folder is configured before anything imports it.
"""

from tasks.settings import configure_prefect_environment

configure_prefect_environment()
