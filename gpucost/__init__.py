"""The application shell: the `gpucost` command line (cli.py) and what surrounds a command (guard.py: the
supervisor, pre-flight checks, one line and a named exit code), its output (console.py), and `gpucost serve`
(serve.py). Prefect flows live in flows/, units of work in tasks/.
Importing it reads nothing: `gpucost.cli.main` points Prefect at the state folder before anything imports Prefect.
"""
