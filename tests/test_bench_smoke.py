"""The benchmark code must not rot: its generators at a tiny size, its growth-exponent fit, and every bench
module importable. (Speed itself is measured by `make bench`, never here.)"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import polars as pl
import pytest

from bench.generate import (
    SKYPILOT_TEMPLATE,
    TELEMETRY_TEMPLATE,
    skypilot_prices,
    telemetry_runs,
    workloads_toml,
    write_skypilot_prices,
    write_telemetry,
)
from bench.training import slope


def test_skypilot_generator_scales_the_sample_to_distinct_offers(tmp_path: Path) -> None:
    template = pl.read_csv(SKYPILOT_TEMPLATE, infer_schema=False)  # 494 rows, each a distinct offer
    frame = skypilot_prices(1_000)
    assert frame.height == 1_000
    assert frame.columns == template.columns
    # row 494 is the first row of replica 1: same instance, region and zone suffixed "-k1"
    assert frame["InstanceType"][494] == template["InstanceType"][0]
    assert frame["Region"][494] == template["Region"][0] + "-k1"
    assert frame["AvailabilityZone"][494] == template["AvailabilityZone"][0] + "-k1"
    assert frame["Region"][0] == template["Region"][0]  # replica 0 is the sample itself, re-priced
    assert frame.select("InstanceType", "Region", "AvailabilityZone").n_unique() == 1_000
    # prices move by at most 10%: 0.9 <= new / old <= 1.1 (4-decimal rounding allows 0.00005 / price more)
    ratio = frame["Price"].cast(pl.Float64) / template["Price"].cast(pl.Float64)[pl.Series(range(1_000)) % 494]
    assert ratio.min() >= 0.9 - 1e-3 and ratio.max() <= 1.1 + 1e-3
    path = write_skypilot_prices(tmp_path / "sky.csv", 1_000)
    assert pl.read_csv(path, infer_schema=False).height == 1_000
    assert skypilot_prices(50).equals(skypilot_prices(50))  # fixed seed


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_telemetry_generator_writes_unique_runs(tmp_path: Path, suffix: str) -> None:
    template = pl.read_csv(TELEMETRY_TEMPLATE, infer_schema_length=None)  # 336 runs
    path = write_telemetry(tmp_path / f"runs{suffix}", 700)
    frame = pl.read_parquet(path) if suffix == ".parquet" else pl.read_csv(path, infer_schema_length=None)
    assert frame.height == 700
    assert frame["run_id"].n_unique() == 700
    assert frame["run_id"][336] == template["run_id"][0] + "-k1"  # row 336 = replica 1 of run 0
    ratio = frame["tokens_per_sec_per_gpu"][:336] / template["tokens_per_sec_per_gpu"]
    assert ratio.min() >= 0.9 - 1e-3 and ratio.max() <= 1.1 + 1e-3
    assert telemetry_runs(10).equals(telemetry_runs(10))


def test_generated_workloads_are_valid_toml_with_scaled_budgets() -> None:
    base = {"workloads": [{"name": "a", "token_budget": 100, "providers": ["aws"], "spot_allowed": False},
                          {"name": "b", "token_budget": 7, "description": 'say "hi"'}]}
    parsed = tomllib.loads(workloads_toml(5, base))["workloads"]
    assert [w["name"] for w in parsed] == ["a-b0", "b-b1", "a-b2", "b-b3", "a-b4"]
    # copy k of a workload has budget x (1 + k): a-b2 is copy 1 of "a" -> 100 x 2; a-b4 copy 2 -> 300
    assert [w["token_budget"] for w in parsed] == [100.0, 7.0, 200.0, 14.0, 300.0]
    assert parsed[0]["providers"] == ["aws"] and parsed[0]["spot_allowed"] is False
    assert parsed[1]["description"] == 'say "hi"'


def test_growth_exponent_is_the_log_log_slope() -> None:
    # 1 s at 1e3 rows, 100 s at 1e4 rows: time grows 100x for 10x rows -> exponent 2
    assert slope([(1_000, 1.0), (10_000, 100.0)]) == pytest.approx(2.0)
    assert slope([(1_000, 1.0)]) is None


@pytest.mark.parametrize("module", ["common", "floors", "prices", "telemetry", "training", "ranking", "nightly",
                                    "pubscale", "fetch", "dask_ingest", "report", "worker", "compare_published",
                                    "__main__"])
def test_bench_modules_import(module: str) -> None:
    importlib.import_module(f"bench.{module}")


def test_offer_generator_repeats_the_real_rows_with_unique_skus(tmp_path: Path) -> None:
    from bench.fetch import SAMPLE, write_offer_file

    rows = write_offer_file(tmp_path / "offer.csv", 1)  # 1 MB
    lines = (tmp_path / "offer.csv").read_text().splitlines()
    sample = SAMPLE.read_text().splitlines()
    assert lines[:6] == sample[:6] and rows == len(lines) - 6 and rows % 44 == 0  # whole copies of the 44 rows
    assert lines[6] == '"00000000' + sample[6][1:] and lines[6 + 44] == '"00000001' + sample[6][1:]
    assert len(set(lines[6:])) == rows  # every record distinct (the sample's rows are; copies differ by SKU)


def test_store_floor_lands_the_file_and_stores_one_typed_offer_per_price_with_its_line(tmp_path: Path) -> None:
    from bench.floors import store_file

    catalog = tmp_path / "sky.csv"
    catalog.write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,AvailabilityZone,SpotPrice\n"
        "p4d.24xlarge,A100,8,96,1152,32.0,us-east-1,us-east-1a,12.0\n"   # line 2: on-demand and spot
        "g5.xlarge,A10G,1,4,16,1.0,us-east-1,us-east-1b,\n"              # line 3: on-demand only
        "m5.large,,,2,8,0.1,us-east-1,us-east-1a,0.05\n"                  # line 4: no GPU, nothing stored
        "g4dn.xlarge,T4,1,4,16,,us-east-1,us-east-1c,0.2\n",               # line 5: spot only (no on-demand price)
        encoding="utf-8")
    result = store_file(str(catalog), str(tmp_path / "store.duckdb"), "skypilot")
    assert result["rows"] == 4  # 2 + 1 + 0 + 1
    assert result["landed_mb"] > 0
    assert not (tmp_path / "store.duckdb").exists()  # the floor cleans up after itself


def test_store_floor_rows_carry_the_landed_sha256_and_lines(tmp_path: Path) -> None:
    import hashlib
    from datetime import UTC, datetime

    import duckdb

    from bench.floors import floor_sql

    runs = tmp_path / "runs.csv"
    runs.write_text("run_id,num_gpus\nr1,8\nr2,16\n", encoding="utf-8")
    sha = hashlib.sha256(runs.read_bytes()).hexdigest()
    con = duckdb.connect()
    con.execute(floor_sql("store_floor_read_csv"), {"path": str(runs)})
    con.execute(floor_sql("store_floor_telemetry_csv"),
                {"path": str(runs), "sha256": sha, "ingested_at": datetime.now(UTC)})
    assert con.execute("select run_id, num_gpus, source_line, content_sha256 from floor_runs order by run_id"
                       ).fetchall() == [("r1", 8, 2, sha), ("r2", 16, 3, sha)]  # header = line 1


def test_report_states_both_floors_and_the_store_floor_over_the_read_floor() -> None:
    from bench.common import BenchConfig, Row
    from bench.report import store_over_read, targets

    section = "1. price ingest (SkyPilot CSV)"
    rows = [Row(section, "ingest_price_file vs read_csv", 10_000, 6.0, 1.0, 800, 500),
            Row(section, "ingest_price_file vs store floor", 10_000, 6.0, 2.5, 800, 600)]
    # store floor 2.5 s / read floor 1.0 s = 2.5x; the pipeline 6.0 s is 6.0x the read floor, 2.4x the store floor
    assert store_over_read(rows, 10_000) == [("ingest_price_file", 2.5)]
    cfg = BenchConfig(max_rows=10_000, rank_offers=1, rank_workloads=1)
    said = "\n".join(targets(rows, cfg))
    assert "MISSED: every data step within 2x of its DuckDB read floor at 10,000 rows" in said
    assert "worst: ingest_price_file vs read_csv, 6.0x)" in said
    assert "MISSED: every data step within 2x of its store floor at 10,000 rows" in said
    assert "ingest_price_file vs store floor, 2.4x" in said
    # to be within 2x of the read floor, within 2 / 2.5 = 0.80x of the store floor
    assert "ingest_price_file 2.5x the read floor (so within 2x of it only at or under 0.80x the store floor)" in said
