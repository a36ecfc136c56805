"""Units of work for gpucost: plain, typed functions. Prefect wrappers live in `flows/`."""
