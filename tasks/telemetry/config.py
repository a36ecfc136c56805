"""config/mlflow_telemetry.toml (how MLflow runs map onto the telemetry contract) as typed models, and the loaders
of it and of config/telemetry.toml (the contract's spelling tables and bounds: tasks.contract.schema.Telemetry)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from tasks import config
from tasks.config import Count, NonNegative, Strict
from tasks.contract.schema import INPUT_KINDS, MLFLOW_READER_FIELDS, Telemetry


class MlflowDefaults(Strict):
    warmup_steps: Annotated[int, Field(ge=0)] = 0
    eval_metric_prefixes: list[str] = []
    power_metric_pattern: str = r"^system/(?:[^/]+/)?gpu_(\d+)_power_usage_watts$"
    page_size: Count = 500
    lookback_minutes: NonNegative = 60


class Throughput(Strict):
    kind: Literal["rate", "counter", "step_time", "totals"]
    metric: str | list[str] | None = None
    per_gpu: bool = False
    tokens_per_step: Any = None    # field specs (tasks/telemetry/mlflow_source.py resolves and names them)
    tokens: Any = None
    seconds: Any = None


class MlflowMapping(Strict):
    """One [mappings.NAME]: contract field -> field spec (resolved by tasks/telemetry/mlflow_source.py, which
    names a bad spec), plus the reader's own keys. A key that is no contract field is a typo."""

    model_config = ConfigDict(extra="allow")  # the contract fields, checked below

    throughput: Throughput
    eval_metric_prefixes: list[str] = []
    warmup_steps: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _contract_fields_only(self) -> MlflowMapping:
        for key in self.model_extra or {}:
            if key not in INPUT_KINDS:
                raise ValueError(f"{key} is not a field of the telemetry contract (a typo?)")
            if key in MLFLOW_READER_FIELDS:
                raise ValueError(f"{key} is derived by the reader itself; a mapping cannot set it")
        return self


class MlflowTelemetry(Strict):
    """config/mlflow_telemetry.toml."""

    defaults: MlflowDefaults = MlflowDefaults()
    mappings: dict[str, MlflowMapping] = {}


def telemetry_config() -> Telemetry:
    """config/telemetry.toml (the entry points load it through tasks/config_files.py and pass it down)."""
    return config.load("telemetry", Telemetry)


def mlflow_telemetry_config() -> MlflowTelemetry:
    """config/mlflow_telemetry.toml (the entry points load it through tasks/config_files.py and pass it down)."""
    return config.load("mlflow_telemetry", MlflowTelemetry)
