"""config/settings.toml [validation.prices]: the bounds a price must fall within (expectations/prices.json,
sql/prices/plausibility.sql)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from tasks.config import NonNegative, Positive, Strict


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


class PriceValidation(Strict):
    max_usd_per_hour: Positive = 1000.0
    min_usd_per_gpu_hour: Positive = 0.005
    max_usd_per_gpu_hour: Positive = 150.0
    max_price_move_factor: Annotated[float, Field(ge=1, allow_inf_nan=False)] = 5.0
    max_gpu_price_factor: Annotated[float, Field(ge=1, allow_inf_nan=False)] = 25.0
    max_future_hours: NonNegative = 24.0
    max_storage_usd_per_gb_month: Positive = 10.0
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

