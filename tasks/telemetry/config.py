"""config/telemetry.toml (spelling tables, validation bounds) and config/mlflow_telemetry.toml (how MLflow runs
map onto the telemetry contract), as typed models over the contract's vocabularies."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from tasks import config
from tasks.config import Count, NonNegative, Positive, Strict
from tasks.telemetry.contract import (
    INPUT_KINDS,
    LOW_PRECISION_FAMILIES,
    MLFLOW_READER_FIELDS,
    CheckpointingKind,
    PrecisionFamily,
    PrecisionRecipe,
    WorkloadType,
)


class PrecisionSpec(Strict):
    family: PrecisionFamily
    recipe: PrecisionRecipe

    @field_validator("recipe")
    @classmethod
    def _recipe_fits_family(cls, recipe: str, info: Any) -> str:
        family = info.data.get("family")
        if family is not None and (family in LOW_PRECISION_FAMILIES) != (recipe != "none"):
            raise ValueError(f"fp8/fp4 name their recipe, other families have recipe 'none' (got {family} {recipe})")
        return recipe


Family = PrecisionFamily


def plain_number(value: float) -> str:
    """A whole number in full (1000001, not 1e+06, which reads as the bound 1000000), other numbers as %g."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def outside_bounds(column: str, value: str, low: float, high: float) -> str:
    """Why `value` (as the row gives it) is outside TelemetryValidation.column_bounds: the words `gpucost predict`
    says of a cell and the registered model of a row."""
    return f"{column} {value} outside {plain_number(low)}..{plain_number(high)} (config/telemetry.toml [validation])"


class TelemetryValidation(Strict):
    """config/telemetry.toml [validation]: the physical bounds of a training run (expectations/telemetry.json)."""

    min_implied_peak_ratio: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.005
    max_implied_peak_ratio: Positive = 1.0
    max_num_gpus: Count = 250_000
    min_params_b: Positive = 0.01
    max_params_b: Positive = 100_000.0
    max_seq_len: Count = 100_000_000
    max_micro_batch: Count = 100_000
    # the shape and machine columns a row may give (the reference files' largest: 128 layers, d_model 25,600,
    # 384 routed experts, expert FFN 32,768, 800 Gb/s per GPU); beyond them the physics overflows into nonsense
    max_n_layers: Count = 10_000
    max_d_model: Count = 1_000_000
    max_moe_experts: Count = 100_000
    max_moe_expert_ffn: Count = 1_000_000
    max_scale_out_gbps_per_gpu: Positive = 100_000.0
    max_future_hours: NonNegative = 24.0

    def column_bounds(self) -> dict[str, tuple[float, float]]:
        """Contract column -> (lowest, highest) a real run can have, both included: what the suite's
        range expectations check at ingest and what `gpucost predict` holds its input rows to."""
        return {
            "num_gpus": (1, self.max_num_gpus),
            "params_b": (self.min_params_b, self.max_params_b),
            "active_params_b": (self.min_params_b, self.max_params_b),
            "seq_len": (1, self.max_seq_len),
            "micro_batch": (1, self.max_micro_batch),
            "n_layers": (1, self.max_n_layers),
            "d_model": (1, self.max_d_model),
            "moe_experts": (1, self.max_moe_experts),
            "moe_top_k": (1, self.max_moe_experts),
            "moe_shared_experts": (0, self.max_moe_experts),
            "moe_expert_ffn": (1, self.max_moe_expert_ffn),
            "scale_up_domain_gpus": (1, self.max_num_gpus),
            # 0 itself is refused too (a network of no bandwidth: the suite's strict minimum)
            "scale_out_gbps_per_gpu": (0, self.max_scale_out_gbps_per_gpu),
        }

    @model_validator(mode="after")
    def _floor_below_ceiling(self) -> TelemetryValidation:
        if self.min_implied_peak_ratio >= self.max_implied_peak_ratio:
            raise ValueError("min_implied_peak_ratio must be below max_implied_peak_ratio")
        return self


class Telemetry(Strict):
    """config/telemetry.toml: the spelling tables and the validation threshold."""

    validation: TelemetryValidation = TelemetryValidation()
    precision: dict[str, Family | PrecisionSpec] = {}
    precision_prefix: dict[str, PrecisionSpec] = {}
    workload: dict[str, WorkloadType] = {}
    activation_checkpointing: dict[str, CheckpointingKind] = {}

    @field_validator("precision")
    @classmethod
    def _low_precision_names_its_recipe(cls, table: dict[str, Any]) -> dict[str, Any]:
        for key, value in table.items():
            if isinstance(value, str) and value in LOW_PRECISION_FAMILIES:
                raise ValueError(f"{key!r} = {value!r}: fp8/fp4 spellings name their recipe, e.g. "
                                 f'{{ family = "{value}", recipe = "delayed" }}')
        return table

    def family_and_recipe(self, value: str | PrecisionSpec) -> tuple[str, str]:
        """A [precision] value: "bf16" (family, recipe none) or { family = "fp8", recipe = "rowwise" }."""
        return (value, "none") if isinstance(value, str) else (value.family, value.recipe)


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
