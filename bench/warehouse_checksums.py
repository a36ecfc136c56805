"""Same inputs, same warehouse rows? Ingest a fixed set of files (every configured sample price list and
telemetry file, plus generated benchmark files) into a fresh warehouse with a fixed ingest time, then print
one line per warehouse table of the raw, core and quarantine layers: rows and an order-free checksum (sum of
the hashes of each row's text).

Uses only the public ingest entry points, so the same script runs against an older checkout:
    PYTHONPATH=/path/to/old/checkout python bench/warehouse_checksums.py OUT_DIR
and the two outputs are compared line by line (`diff`).
"""

from __future__ import annotations

import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

INGESTED_AT = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
GENERATED_ROWS = 20_000


def open_warehouse() -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    """The warehouse with its reference tables, the GPU aliases and the ingest functions' configuration arguments:
    as the flows pass them where the entry points take them (a checkout from before they did reads its config)."""
    import inspect

    from tasks import reference
    from tasks.prices.ingest import ingest_price_file
    from tasks.warehouse import connect

    if "limits" not in inspect.signature(ingest_price_file).parameters:  # an older checkout
        con = connect()
        reference.load_reference_tables(con)
        return con, reference.read_aliases(), {}, {}
    from tasks import config_files
    from tasks.contract.normalise import load_vocabulary

    settings = config_files.settings()
    resources, telemetry = config_files.resources(settings), config_files.telemetry()
    files = reference.reference_paths(settings.reference)
    limits = settings.ingest.limits(resources.home)
    con = connect(resources.warehouse)
    reference.load_reference_tables(con, files)
    return (con, reference.read_aliases(files["gpu_aliases"]),
            {"validation": settings.validation.prices, "reference_dir": resources.reference, "limits": limits},
            {"vocabulary": load_vocabulary(telemetry), "validation": telemetry.validation, "limits": limits})


def main(work: Path) -> None:
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    os.environ["GPUCOST_HOME"] = str(home)
    from bench.generate import write_skypilot_prices, write_telemetry
    from tasks import config_files
    from tasks.prices.ingest import PriceSource, ingest_price_file
    from tasks.settings import PROJECT_ROOT
    from tasks.sources import configured_price_sources, configured_telemetry_paths
    from tasks.telemetry.ingest import ingest_telemetry_file

    def moved(path: Path) -> Path:
        """The input copied under `work` (source_file is stored: both checkouts must read the same paths)."""
        target = work / "inputs" / Path(path).resolve().relative_to(PROJECT_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        return target

    generated = work / "generated"
    sky = write_skypilot_prices(generated / "skypilot.csv", GENERATED_ROWS)
    runs = [write_telemetry(generated / f"runs.{suffix}", GENERATED_ROWS) for suffix in ("csv", "parquet")]
    con, aliases, price_options, telemetry_options = open_warehouse()
    prices = [
        PriceSource(moved(s.path), s.provider, s.format,
                    {k: str(moved(Path(v))) if k.endswith(("_vms", "_path", "_file")) else v
                     for k, v in (s.options or {}).items()} or None)
        for s in configured_price_sources(config_files.sources())
    ]
    for source in [*prices, PriceSource(sky, "aws", "skypilot")]:
        ingest_price_file(con, source, aliases, INGESTED_AT, **price_options)
    for path in [*map(moved, configured_telemetry_paths(config_files.sources())), *runs]:
        ingest_telemetry_file(con, path, aliases, INGESTED_AT, **telemetry_options)
    tables = con.table("information_schema.tables").filter(
        "table_schema in ('raw', 'core', 'quarantine') and table_type = 'BASE TABLE'"
    ).project("table_schema || '.' || table_name as name").order("name").fetchall()
    for (table,) in tables:
        # the row as text (every column, JSON included), hashed, summed: independent of row order
        relation = con.table(table)
        if table == "raw.ingested_files":  # {reason: count} as a set: the key order says nothing
            # the landed file's path is new lineage (issue 25): left out, so that older checkouts compare
            if "landed_path" in relation.columns:
                relation = relation.project("* exclude (landed_path)")
            relation = relation.project("* replace (to_json(map_from_entries(list_sort(map_entries("
                                        "skipped_by_reason::map(varchar, bigint))))) as skipped_by_reason)")
        rows = relation.project("cast(struct_pack(*COLUMNS(*)) as varchar) as row_text")
        count, checksum = rows.aggregate("count(*), sum(hash(row_text))").fetchall()[0]
        print(f"{table}\t{count}\t{checksum}")
    con.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
