"""The ingest_telemetry flow end to end through Prefect (one test: the harness is costly)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tasks.warehouse import warehouse
from tests import configured
from tests.telemetry.helpers import SAMPLE


@pytest.mark.flow
def test_flow_ingests_files_and_rebuilds_the_feature_table(prefect_harness, tmp_path: Path) -> None:
    from flows.ingest_telemetry import ingest_telemetry

    broken = tmp_path / "broken.csv"
    pl.read_csv(SAMPLE, infer_schema=False).head(3).drop("precision").write_csv(broken)
    outcomes = ingest_telemetry([broken, SAMPLE])
    assert [o.status for o in outcomes] == ["quarantined", "loaded"]
    assert outcomes[0].error == "missing required column 'precision'"
    # 336 sample rows - 10 OLMo rows without num_gpus (see test_sample_features)
    assert (outcomes[1].rows_loaded, outcomes[1].rows_quarantined) == (326, 10)
    with warehouse(configured.resources().warehouse) as con:
        assert con.sql("select count(*) from features.training_runs").fetchall()[0][0] == 326
