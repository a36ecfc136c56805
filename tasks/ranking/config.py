"""config/ranking.toml: the cost model's parameters, as a typed model."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from tasks import config
from tasks.config import Count, Fraction, MemoryLimit, NonNegative, Positive, Strict
from tasks.prices.config import MAX_PUE
from tasks.reference import MAX_GRID_GCO2E_PER_KWH


class Memory(Strict):
    usable_fraction: Annotated[float, Field(gt=0, le=1)]
    qlora_weight_bytes: Positive
    lora_weight_bytes: Positive
    adapter_params_fraction: Fraction


class PrecisionBytes(Strict):
    weight_bytes: Positive
    grad_bytes: Positive
    master_weight_bytes: NonNegative


class PriceAge(Strict):
    max_price_age_days: Annotated[int, Field(ge=1)] = 180


class Cluster(Strict):
    default_max_gpus: Count = 1024


class Machines(Strict):
    """config/ranking.toml [machines]: the machine assumed where data/reference/instance_machines.csv has none."""

    # Gb/s of scale-out network per GPU for an instance type without a documented network (recorded as defaulted)
    default_scale_out_gbps_per_gpu: Annotated[float, Field(gt=0, le=100_000, allow_inf_nan=False)] = 10.0


class Carbon(Strict):
    """config/ranking.toml [carbon]: owned GPU sites' grid intensity (clouds: data/reference/region_carbon.csv)."""

    # site (the owned price list's region) -> g CO2e per kWh, location-based; a site not listed gets no CO2 figure
    owned_gco2e_per_kwh: dict[str, Annotated[float, Field(ge=0, le=MAX_GRID_GCO2E_PER_KWH, allow_inf_nan=False)]] = {}


class Energy(Strict):
    utilisation_of_tdp: Annotated[float, Field(gt=0, le=1.5, allow_inf_nan=False)]
    cloud_pue: Annotated[float, Field(ge=1, le=MAX_PUE, allow_inf_nan=False)]
    owned_pue: Annotated[float, Field(ge=1, le=MAX_PUE, allow_inf_nan=False)]


class Spot(Strict):
    checkpoint_interval_minutes: Positive
    restart_minutes: NonNegative
    history_window_days: Count
    interruption_rate_per_hour: dict[str, NonNegative]

    @field_validator("interruption_rate_per_hour")
    @classmethod
    def _has_default(cls, rates: dict[str, float]) -> dict[str, float]:
        if "default" not in rates:
            raise ValueError("needs a `default` rate (for providers not listed)")
        return rates


class Commitments(Strict):
    resale_fraction: Fraction = 0.0


class Checkpoints(Strict):
    price_list_storage_type: dict[str, str] = {}
    usd_per_gb_month: dict[str, NonNegative] = {}


class Publish(Strict):
    top_offers_per_workload: Count = 5
    parquet_dir: str = "published-parquet"
    parquet_snapshots_kept: Count = 7
    parquet_memory_limit: MemoryLimit = "512MB"
    parquet_threads: Count = 1


class RankingCompute(Strict):
    rows_per_batch: Count = 500_000
    memory_limit: MemoryLimit = "1GB"  # config/ranking.toml's: with the process's own ~420 MiB, within 2 GiB
    temp_directory: str = "duckdb_tmp"


class Ranking(Strict):
    """config/ranking.toml: the cost model's parameters."""

    memory: Memory
    precisions: dict[str, PrecisionBytes]
    optimizers: dict[str, NonNegative]
    precision_fallback: dict[str, str] = {}
    prices: PriceAge = PriceAge()
    cluster: Cluster = Cluster()
    machines: Machines = Machines()
    carbon: Carbon = Carbon()
    energy: Energy
    spot: Spot
    commitments: Commitments = Commitments()
    checkpoints: Checkpoints = Checkpoints()
    publish: Publish = Publish()
    compute: RankingCompute = RankingCompute()


def ranking_config() -> Ranking:
    """config/ranking.toml (the entry points load it through tasks/config_files.py and pass it down)."""
    return config.load("ranking", Ranking)
