"""The `train` Prefect flow end to end: feature table in the warehouse -> MLflow champion."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests import configured
from tests.conftest import TELEMETRY_SAMPLES


@pytest.mark.flow
def test_train_flow_reads_the_feature_table_and_registers_a_champion(prefect_harness, con, small_config_dir: Path,
                                                                     use_config) -> None:
    from flows.train import train
    from tasks.contract.features import refresh_feature_table
    from tasks.model.predict import load_champion
    from tasks.telemetry.ingest import ingest_telemetry_file

    use_config(small_config_dir)
    ingest_telemetry_file(con, TELEMETRY_SAMPLES / "published_benchmarks.csv", configured.aliases(),
                          datetime.now(UTC), **configured.telemetry_options(vocabulary=configured.vocabulary()))
    rows = refresh_feature_table(con, configured.reference())
    con.close()  # the flow opens the warehouse itself

    outcome = train()
    assert outcome.rows == rows  # every feature row has a target in the bundled sample
    assert (outcome.version, outcome.alias) == ("1", "champion")
    assert load_champion(configured.resources().tracking_uri, configured.contract()).version == "1"


@pytest.mark.flow
def test_train_without_telemetry_fails_with_a_reason(prefect_harness, gpucost_home: Path) -> None:
    from typer.testing import CliRunner

    from gpucost.cli import app

    result = CliRunner().invoke(app, ["train"])
    assert result.exit_code == 1
    assert "ingest telemetry" in result.output  # the message says what to run first
