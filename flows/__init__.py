"""Prefect flows: composition only (which tasks, in which order, with which retries).

Importing a flow reads no file and no environment. Prefect reads its settings once, at its own import, so
every entry point that runs a flow configures Prefect's environment first (`gpucost.cli.main`, the bench's
measured steps, tests/conftest.py); a Prefect worker's flow-run process inherits it from `gpucost serve`.
"""
