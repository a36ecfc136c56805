"""config/settings.toml [validation.prices]: the bounds a price must fall within (expectations/prices.json,
sql/prices/plausibility.sql)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from tasks.config import Count, NonNegative, Positive, Strict


class GpuPriceClass(Strict):
    """Absolute bounds of the price per GPU-hour for a class of GPUs (config/settings.toml
    [[validation.prices.gpu_classes]]); a GPU in no class has the suite's own bounds only."""

    name: str
    gpus: list[str] = Field(min_length=1)
    min_usd_per_gpu_hour: Positive
    max_usd_per_gpu_hour: Positive

    @model_validator(mode="after")
    def _floor_below_ceiling(self) -> GpuPriceClass:
        if self.min_usd_per_gpu_hour >= self.max_usd_per_gpu_hour:
            raise ValueError(f"min_usd_per_gpu_hour must be below max_usd_per_gpu_hour (class {self.name!r})")
        return self


# A site's power usage effectiveness above this is a typo or a unit mix-up (the worst data centres run near 2.5;
# 1.0 is no overhead at all). Also bounds config/ranking.toml [energy] cloud_pue and owned_pue.
MAX_PUE = 3.0


class PriceValidation(Strict):
    max_usd_per_hour: Positive = 1000.0
    min_usd_per_gpu_hour: Positive = 0.005
    max_usd_per_gpu_hour: Positive = 150.0
    max_price_move_factor: Annotated[float, Field(ge=1, allow_inf_nan=False)] = 5.0
    max_gpu_price_factor: Annotated[float, Field(ge=1, allow_inf_nan=False)] = 25.0
    max_future_hours: NonNegative = 24.0
    max_storage_usd_per_gb_month: Positive = 10.0
    # an owned-GPU price list's site figures (tasks/providers/owned.py): finite and at most these
    max_electricity_usd_per_kwh: Positive = 2.0
    max_pue: Annotated[float, Field(ge=1, le=MAX_PUE, allow_inf_nan=False)] = MAX_PUE
    # a NEW offer's USD per GPU-hour against the median of its GPU's current offers of the same pricing kind
    # (sql/prices/plausibility.sql): below this share of it, the price is taken for a per-instance price read as
    # per GPU (3.0 USD per GPU-hour given for an 8-GPU instance read as its price: 0.375 per GPU-hour)
    min_share_of_gpu_median: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 0.1
    # ... when that median stands on offers of at least this many providers, observed within this many days of the
    # newest of them (a dated price history's older rows are neither counted nor checked)
    gpu_median_min_providers: Count = 2
    gpu_median_window_days: Annotated[int, Field(ge=1, le=36_500)] = 180
    # providers whose prices are not compared with the clouds' (owned GPUs' amortised cost is far below a
    # cloud's price by nature)
    gpu_median_exempt_providers: list[str] = ["owned"]
    allowed_currencies: list[str] = ["USD"]
    gpu_classes: list[GpuPriceClass] = []

    @model_validator(mode="after")
    def _one_class_per_gpu(self) -> PriceValidation:
        seen: dict[str, str] = {}
        for price_class in self.gpu_classes:
            for gpu in price_class.gpus:
                if gpu in seen:
                    raise ValueError(f"GPU {gpu!r} is in two classes ({seen[gpu]!r}, {price_class.name!r})")
                seen[gpu] = price_class.name
        return self

