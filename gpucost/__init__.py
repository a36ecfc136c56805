"""The application shell: the `gpucost` command line (cli.py) and what surrounds a command (guard.py: the
supervisor, pre-flight checks, one line and a named exit code), its output (console.py), and `gpucost serve`
(serve.py). Prefect flows live in flows/, units of work in tasks/.

Prefect reads its settings at import, so the state folder is configured before anything imports it.
"""

from tasks.settings import configure_prefect_environment

configure_prefect_environment()
