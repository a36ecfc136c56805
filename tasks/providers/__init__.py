"""One module per price source: its config model (config/fetch.toml [NAME]), its fetcher, its formats and
their adapters, declared together as a `Provider`; tasks/providers/registry.py is the one list of them."""
