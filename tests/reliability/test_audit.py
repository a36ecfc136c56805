"""Auditability: every published ranking row traces to its price observation (file and line), its GPU spec
row and the model version; a GPU without specs is reported, not ranked; an unknown GPU name is quarantined
and named."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tasks.prices.ingest import PriceSource, ingest_price_file
from tasks.settings import REFERENCE_DIR
from tests import configured
from tests.reliability import driver
from tests.reliability.conftest import States

# Run against the published file with the working warehouse attached read-only.
UNTRACEABLE_ROWS = """
with ranking as (select row_number() over () as row_id, * from gpu_cost_ranking),
observation as (
    select r.row_id, count(o.source_line) as observations, count(raw.source_file) as raw_records
    from ranking r
    left join wh.core.price_observations o
        on o.source_file = r.source_file and o.source_line = r.source_line and o.provider = r.provider
        and o.region = r.region and o.instance_type = r.instance_type and o.pricing = r.pricing
        and o.usd_per_hour = r.usd_per_hour and o.gpu = r.gpu
    left join (select distinct source_file from wh.raw.ingested_files where landed_path is not null) raw
        on raw.source_file = r.source_file  -- the line is in the landed file
    group by r.row_id
),
spec as (
    select r.*, s.gpu as spec_gpu, s.source as spec_source
    from ranking r left join gpu_specs s on s.gpu = r.gpu
),
model as (
    select r.*, v.version as registered_version
    from ranking r left join model_versions v on v.version = r.model_version
),
final as (
    select 'no unique price observation' as problem, count(*) as n from observation
    where observations != 1 or raw_records != 1
    union all
    select 'ranked without its GPU spec row', count(*) from spec
    where rank_by_cost is not null and (spec_gpu is null or spec_source is distinct from gpu_spec_source)
    union all
    select 'ranked without a registered model version', count(*) from model
    where rank_by_cost is not null and registered_version is null
    union all
    select 'no source file or line', count(*) from ranking where source_file is null or source_line is null
)
select problem, n from final where n > 0
"""


def test_every_published_row_traces_to_its_observation_spec_and_model(work_home: States) -> None:
    home = work_home.restore("base")
    con = duckdb.connect(str(home / "published.duckdb"), read_only=True)
    try:
        con.execute("attach $path as wh (read_only)", {"path": str(home / "warehouse.duckdb")})
        assert con.sql(UNTRACEABLE_ROWS).fetchall() == []
        ranked, versions = con.sql("select count(*), list(distinct model_version) from gpu_cost_ranking "
                                   "where rank_by_cost is not null").fetchall()[0]
        # the check above is not vacuous: the base night ranked offers, all with champion version 1
        assert ranked > 0 and versions == ["1"]
        # one row, traced by hand: Lambda's first sample line (line 2 of the CSV, after the header) is
        # gpu_8x_v100_n in europe-central-1 at 6.32 USD per hour; "V100" is V100-16GB in gpu_aliases.csv
        row = con.sql("select source_file, source_line, usd_per_hour, gpu from gpu_cost_ranking "
                      "where provider = 'lambda' and region = 'europe-central-1' and instance_type = 'gpu_8x_v100_n'"
                      " limit 1").fetchall()
        assert row == [(str(driver.PRICES / "skypilot_v8_lambda_gpu.csv"), 2, 6.32, "V100-16GB")]
    finally:
        con.close()


def test_a_gpu_without_specs_is_reported_not_ranked(work_home: States, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    home = work_home.restore("base")
    config = tmp_path / "config"
    shutil.copytree(work_home.config, config)
    specs = pl.read_csv(REFERENCE_DIR / "gpu_specs.csv", infer_schema=False)
    specs.filter(pl.col("gpu") != "A10").write_csv(tmp_path / "gpu_specs_without_a10.csv")
    settings = (config / "settings.toml").read_text(encoding="utf-8")
    settings = settings.replace('gpu_specs = "data/reference/gpu_specs.csv"',
                                f'gpu_specs = "{tmp_path / "gpu_specs_without_a10.csv"}"')
    (config / "settings.toml").write_text(settings, encoding="utf-8")
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(config))

    outcome = driver.publish(driver.NEXT_NIGHT)

    # the reason names the specs file the configuration points at, not the shipped default
    reason = f"no row for GPU A10 in gpu_specs ({tmp_path / 'gpu_specs_without_a10.csv'}): cannot size or predict"
    with duckdb.connect(str(home / "published.duckdb"), read_only=True) as con:
        a10 = con.sql("select count(*), count(rank_by_cost), list(distinct not_ranked_reason) "
                      "from gpu_cost_ranking where gpu = 'A10' and cluster_choice = 'cheapest'").fetchall()[0]
        n_workloads = con.sql("select count(distinct workload) from gpu_cost_ranking").fetchall()[0][0]
    # 17 A10 lines in the Lambda sample, each an on-demand offer (no spot price), once per workload
    assert a10 == (17 * n_workloads, 0, [reason])
    summary = {k: v for k, v in outcome.ranking.not_ranked_by_reason.items() if k.startswith("no row for GPU A10")}
    assert list(summary.values()) == [17 * n_workloads]
    assert "A10" in outcome.markdown


def test_an_unknown_gpu_name_is_quarantined_and_named(con, tmp_path: Path) -> None:
    sample = (driver.PRICES / "skypilot_v8_lambda_gpu.csv").read_text(encoding="utf-8").splitlines()
    header, first = sample[0], sample[1]
    path = tmp_path / "new_gpu.csv"
    path.write_text(f"{header}\n{first}\n{first.replace(',V100,', ',H300X,')}\n", encoding="utf-8")
    outcome = ingest_price_file(con, PriceSource(path, "lambda", "skypilot"), configured.aliases(),
                                datetime(2026, 1, 5, tzinfo=UTC), **configured.price_options())
    assert (outcome.rows_loaded, outcome.rows_quarantined) == (1, 1)
    assert "unknown GPU names: H300X" in outcome.notes
    rejected = con.execute("select source_line, failed_check from quarantine.rejected_rows").fetchall()
    assert rejected == [(3, "expect_column_values_to_not_be_null(gpu): unknown GPU: the name is not in the alias "
                            "table (data/reference/gpu_aliases.csv)")]
