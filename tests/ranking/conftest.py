"""Ranking fixtures: the real AWS SkyPilot sample ingested into the test warehouse, and a fixed-throughput
stand-in for the champion so that cost figures can be worked out by hand (the model itself is tested
in tests/model; here throughput is an input of the cost formula)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import polars as pl
import pytest

from tasks.config_files import load_config
from tasks.prices.ingest import PriceSource, ingest_price_file
from tasks.ranking.config import Ranking
from tests import configured
from tests.conftest import PRICE_SAMPLES

AWS_SAMPLE = PRICE_SAMPLES / "skypilot_v8_aws_gpu_subset.csv"
LAMBDA_SAMPLE = PRICE_SAMPLES / "skypilot_v8_lambda_gpu.csv"


class FixedThroughput:
    """Predicts the same tokens/s/GPU (and interval) for every run."""

    def __init__(self, tokens: float = 1000.0, low: float = 800.0, high: float = 1250.0, version: str = "7") -> None:
        self.tokens, self.low, self.high, self.version = tokens, low, high, version
        self.calls = 0

    def predict(self, features: pl.DataFrame) -> pl.DataFrame:
        self.calls += 1
        return features.with_columns(
            predicted_tokens_per_sec_per_gpu=pl.lit(self.tokens),
            predicted_low=pl.lit(self.low),
            predicted_high=pl.lit(self.high),
            model_version=pl.lit(self.version),
        )


def ingest(con, path, provider: str) -> None:
    ingest_price_file(con, PriceSource(path, provider, "skypilot"), configured.aliases(),
                      datetime(2026, 1, 5, tzinfo=UTC), **configured.price_options())


@pytest.fixture
def aws_prices(con):
    ingest(con, AWS_SAMPLE, "aws")
    return con


def pinned_ranking_tables() -> dict:
    """The shipped config/ranking.toml (plain tables) with the numbers the hand calculations use pinned."""
    config = copy.deepcopy(load_config("ranking"))
    config["energy"].update(utilisation_of_tdp=0.9, cloud_pue=1.2, owned_pue=1.4)
    config["spot"].update(checkpoint_interval_minutes=30, restart_minutes=10, history_window_days=30)
    config["spot"]["interruption_rate_per_hour"] = {"default": 0.05, "aws": 0.02}
    config["memory"].update(usable_fraction=0.9, qlora_weight_bytes=0.5, lora_weight_bytes=2.0,
                            adapter_params_fraction=0.01)
    return config


@pytest.fixture
def ranking_config() -> Ranking:
    return Ranking.model_validate(pinned_ranking_tables())
