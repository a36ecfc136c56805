"""Every configuration file (config/*.toml) as a typed model, and the one loader that reads them.

Each file is validated whole when it is read: an unknown key is a typo, a value of the wrong type or out of
range is refused, and the problem is said in ONE line naming the file, the key path and what was wrong, e.g.
`config/settings.toml: ingest.runner.kind: must be one of 'threads', 'sequential', 'dask' (got 'dsak')`, raised as
ConfigError (the command line's exit code 2). Environment overrides (GPUCOST_INGEST_RUNNER, ...) are read by
`tasks.settings.Environment` (pydantic-settings) and applied over the file before it is validated, so a bad
override is named by its variable.

Flows load what they need once (`settings()`, `ranking()`, ... or `load(NAME)`) and pass the typed section
into the task functions; a task called from many places takes it as a keyword argument and reads the file
itself only when it is not given. `tasks.settings.load_config` still returns a file's plain tables (validated
here first) for scripts and tests that edit them.
"""

from __future__ import annotations

import tomllib
from difflib import get_close_matches
from functools import cache
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tasks.settings import ConfigError, Environment, Strict, config_dir, resolve_project_path
from tasks.telemetry.contract import (
    CHECKPOINTING_KINDS,
    INPUT_KINDS,
    LOW_PRECISION_FAMILIES,
    MLFLOW_READER_FIELDS,
    PRECISION_FAMILIES,
    PRECISION_RECIPES,
    WORKLOAD_TYPES,
)

NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1)]


# ------------------------------------------------------------------------------------------- settings.toml


ReferenceName = Literal["folder", "gpu_specs", "gpu_aliases", "model_shapes", "matmul_ceilings", "instance_machines",
                        "region_carbon"]


class ReferenceFiles(Strict):
    """config/settings.toml [reference]: every reference-data file, in one place."""

    folder: str = "data/reference"   # the price adapters' lookup tables, read by file name
    gpu_specs: str = "data/reference/gpu_specs.csv"
    gpu_aliases: str = "data/reference/gpu_aliases.csv"
    model_shapes: str = "data/reference/model_shapes.csv"
    matmul_ceilings: str = "data/reference/gpu_matmul_ceilings.csv"
    instance_machines: str = "data/reference/instance_machines.csv"
    region_carbon: str = "data/reference/region_carbon.csv"

    def path(self, name: ReferenceName) -> Path:
        return resolve_project_path(getattr(self, name))


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


class Validation(Strict):
    prices: PriceValidation = PriceValidation()


INGEST_RUNNERS = ("threads", "sequential", "dask")   # how the ingest flows run their files (flows/ingest_runner.py)


class IngestRunner(Strict):
    # sequential by default: neither pool beat it on the 2-core bench (docs/operations.md, parallel ingest)
    kind: Literal[INGEST_RUNNERS] = "sequential"  # type: ignore[valid-type]
    workers: Count = 2
    threads_per_worker: Count = 1

    @property
    def parallel(self) -> bool:
        """Staged by a Prefect task runner (threads or Dask), the flow applying the files in order."""
        return self.kind != "sequential"


class IngestSettings(Strict):
    memory_limit: str = "400MB"
    temp_directory: str = "duckdb_spill"
    # landed files no current row refers to are removed this many days after their ingest; None: all kept
    landing_retention_days: Annotated[int, Field(ge=0)] | None = None
    runner: IngestRunner = IngestRunner()


class PrefectRetries(Strict):
    task_retries: Annotated[int, Field(ge=0)] = 2
    task_retry_delay_seconds: NonNegative = 2


class ServeSettings(Strict):
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 4200


class PreflightSettings(Strict):
    min_free_mb: NonNegative = 256


class SignalSettings(Strict):
    stop_grace_seconds: NonNegative = 5


class SqlSettings(Strict):
    """config/settings.toml [sql]: the bounds of `gpucost sql` (0 lifts the timeout and the row limit)."""

    timeout_seconds: NonNegative = 60.0
    memory_limit: Annotated[str, Field(pattern=r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$")] = "1GB"
    max_rows: Annotated[int, Field(ge=0)] = 1000
    max_cell_chars: Count = 10_000


class Settings(Strict):
    """config/settings.toml."""

    reference: ReferenceFiles = ReferenceFiles()
    validation: Validation = Validation()
    ingest: IngestSettings = IngestSettings()
    prefect: PrefectRetries = PrefectRetries()
    serve: ServeSettings = ServeSettings()
    preflight: PreflightSettings = PreflightSettings()
    signals: SignalSettings = SignalSettings()
    sql: SqlSettings = SqlSettings()


# -------------------------------------------------------------------------------------------- sources.toml


class PriceEntry(Strict):
    path: Annotated[str, Field(min_length=1)]
    provider: Annotated[str, Field(min_length=1)]
    format: str
    options: dict[str, str | int | float | bool] = {}

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        from tasks.providers import registry  # the adapters import this module's PriceValidation

        if value not in registry.formats():
            raise ValueError(f"must be one of {', '.join(repr(f) for f in registry.formats())} (got {value!r})")
        return value


class TelemetryEntry(Strict):
    path: Annotated[str, Field(min_length=1)]


class MlflowEntry(Strict):
    tracking_uri: Annotated[str, Field(min_length=1)]
    experiments: Annotated[list[str], Field(min_length=1)]
    mapping: Annotated[str, Field(min_length=1)]


class Sources(Strict):
    """config/sources.toml."""

    prices: list[PriceEntry] = []
    telemetry: list[TelemetryEntry] = []
    mlflow: list[MlflowEntry] = []


# ------------------------------------------------------------------------------------------ telemetry.toml


class PrecisionSpec(Strict):
    family: Literal[PRECISION_FAMILIES]  # type: ignore[valid-type]
    recipe: Literal[PRECISION_RECIPES]  # type: ignore[valid-type]

    @field_validator("recipe")
    @classmethod
    def _recipe_fits_family(cls, recipe: str, info: Any) -> str:
        family = info.data.get("family")
        if family is not None and (family in LOW_PRECISION_FAMILIES) != (recipe != "none"):
            raise ValueError(f"fp8/fp4 name their recipe, other families have recipe 'none' (got {family} {recipe})")
        return recipe


Family = Literal[PRECISION_FAMILIES]  # type: ignore[valid-type]


class TelemetryValidation(Strict):
    """config/telemetry.toml [validation]: the physical bounds of a training run (expectations/telemetry.json)."""

    min_implied_peak_ratio: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.005
    max_implied_peak_ratio: Positive = 1.0
    max_num_gpus: Count = 250_000
    min_params_b: Positive = 0.01
    max_params_b: Positive = 100_000.0
    max_seq_len: Count = 100_000_000
    max_micro_batch: Count = 100_000
    max_future_hours: NonNegative = 24.0

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
    workload: dict[str, Literal[WORKLOAD_TYPES]] = {}  # type: ignore[valid-type]
    activation_checkpointing: dict[str, Literal[CHECKPOINTING_KINDS]] = {}  # type: ignore[valid-type]

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


# ----------------------------------------------------------------------------------- mlflow_telemetry.toml


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


class MlflowMapping(BaseModel):
    """One [mappings.NAME]: contract field -> field spec (resolved by tasks/telemetry/mlflow_source.py, which
    names a bad spec), plus the reader's own keys. A key that is no contract field is a typo."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

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


# ------------------------------------------------------------------------------------------- ranking.toml


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
    owned_gco2e_per_kwh: dict[str, Annotated[float, Field(ge=0, le=5_000, allow_inf_nan=False)]] = {}


class Energy(Strict):
    utilisation_of_tdp: Annotated[float, Field(gt=0, le=1.5)]
    cloud_pue: Annotated[float, Field(ge=1)]
    owned_pue: Annotated[float, Field(ge=1)]


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
    parquet_memory_limit: Annotated[str, Field(pattern=r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$")] = \
        "512MB"
    parquet_threads: Count = 1


class RankingCompute(Strict):
    rows_per_batch: Count = 500_000
    memory_limit: str = "1500MB"
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


# -------------------------------------------------------------------------------------------- models.toml


class Target(Strict):
    min_mfu: Annotated[float, Field(gt=0, le=1)] = 0.01
    max_mfu: Annotated[float, Field(gt=0, le=1)] = 1.0


class FeatureColumns(Strict):
    log_numeric: list[str] = []
    numeric: list[str] = []
    categorical: list[str] = []


class Structured(Strict):
    optimizer_bytes_per_param: Positive
    default_scale_up_domain_gpus: Annotated[float, Field(ge=1)]
    default_scale_out_gbps_per_gpu: Positive
    scale_out_efficiency: Annotated[float, Field(gt=0, le=1)]
    a2a_scale_up_efficiency: Annotated[float, Field(gt=0, le=1)]
    a2a_scale_out_efficiency: Annotated[float, Field(gt=0, le=1)]
    a2a_bytes_per_element: Positive
    default_global_batch_tokens: Positive
    default_micro_batch_tokens: Positive
    default_ffn_matrices: Positive
    shape_aspect_ratio: Positive
    estimate_vocab: Positive
    estimate_fine_grained_ratio: Annotated[float, Field(ge=1)]
    estimate_top_k_coarse: Annotated[float, Field(ge=1)]
    estimate_top_k_fine: Annotated[float, Field(ge=1)]
    fsdp_memory_fraction: Annotated[float, Field(gt=0, le=1)]
    default_matmul_ceiling: Annotated[float, Field(gt=0, le=1)]
    framework_ridge: NonNegative
    max_framework_factor: Annotated[float, Field(ge=1)]
    lowp_ratio_prior: Positive
    lowp_ratio_weight: NonNegative
    grouped_gemm_half_size_prior: Positive
    grouped_gemm_prior_weight: NonNegative
    a2a_overlap_prior: Fraction
    a2a_overlap_prior_weight: NonNegative
    moe_permute_bytes_prior: Positive
    moe_permute_prior_weight: NonNegative
    low_precision_share: dict[str, Fraction] = {}
    frameworks: dict[str, str] = {}


class CrossValidation(Strict):
    groupings: Annotated[list[str], Field(min_length=1)]
    max_folds: Annotated[int, Field(ge=2)] = 10


class Selection(Strict):
    metric: Literal["median_ape"] = "median_ape"


class Intervals(Strict):
    level: Annotated[float, Field(gt=0, lt=1)] = 0.8
    known_folds: Annotated[int, Field(ge=2)] = 5
    min_flag_rows: Count = 20
    widen_factor: Annotated[float, Field(ge=1)] = 1.5
    residual_floor: Positive = 0.01
    min_moe_rows: Count = 30


class Importance(Strict):
    n_repeats: Count = 3


class ModelCompute(Strict):
    openmp_threads: Count = 1
    residual_plot_dpi: Count = 80


class Promotion(Strict):
    min_relative_improvement: NonNegative = 0.01
    promote_refit_on_new_data: bool = True


class Candidate(Strict):
    name: Annotated[str, Field(min_length=1)]
    kind: Annotated[str, Field(min_length=1)]
    params: dict[str, Any] = {}


class Models(Strict):
    """config/models.toml: the token-efficiency model's training."""

    seed: Annotated[int, Field(ge=0)]
    target: Target = Target()
    features: FeatureColumns
    residual_features: FeatureColumns
    structured: Structured
    cv: CrossValidation
    selection: Selection = Selection()
    intervals: Intervals = Intervals()
    importance: Importance = Importance()
    compute: ModelCompute = ModelCompute()
    promotion: Promotion = Promotion()
    candidates: Annotated[list[Candidate], Field(min_length=1)]


# ----------------------------------------------------------------------------------------- workloads.toml


class WorkloadsFile(Strict):
    """config/workloads.toml: the list only; each entry is checked by tasks.ranking.workloads.validate_workload,
    which also needs config/ranking.toml (precisions, optimizers) and names the workload."""

    workloads: list[dict[str, Any]] = []


# -------------------------------------------------------------------------------------------------- loader

MODELS: dict[str, type[BaseModel]] = {
    "settings": Settings,
    "sources": Sources,
    "telemetry": Telemetry,
    "mlflow_telemetry": MlflowTelemetry,
    "ranking": Ranking,
    "models": Models,
    "workloads": WorkloadsFile,
}


def config_file(name: str) -> Path:
    return config_dir() / f"{name}.toml"


def shown(path: Path) -> str:
    """A config file as the user would type it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _key_path(error: dict[str, Any], data: Any) -> tuple[str, int]:
    """The key path of an error in the file's own terms, and how many of its parts the file holds. Union
    member tags that pydantic adds to `loc` (e.g. 'str', 'PrecisionSpec') are dropped: a part is kept when the
    data has it, or when it is a missing key. List entries count from 1, as a person counts [[tables]]."""
    loc = tuple(error["loc"])
    parts: list[str] = []
    depth = 0
    for index, part in enumerate(loc):
        if isinstance(data, dict) and part in data:
            parts.append(str(part))
            data = data[part]
            depth += 1
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            parts[-1:] = [f"{parts[-1] if parts else ''}[{part + 1}]"]
            data = data[part]
            depth += 1
        elif index == len(loc) - 1 and error["type"] == "missing":
            parts.append(str(part))
    return ".".join(parts) or "(top level)", depth


KINDS = {
    "int": "an integer", "float": "a number", "string": "a string", "bool": "true or false",
    "list": "a list", "dict": "a table", "model": "a table", "model_attributes": "a table",
}


def what_was_wrong(error: dict[str, Any]) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        return "unknown key (a typo?)"
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        expected = str(error.get("ctx", {}).get("expected", "")).replace(" or ", ", ")
        return f"must be one of {expected} (got {value!r})"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    base = kind.removesuffix("_type").removesuffix("_parsing")
    if base in KINDS:
        return f"must be {KINDS[base]} (got {value!r})"
    comparisons = {"greater_than": "> {gt}", "greater_than_equal": ">= {ge}", "less_than": "< {lt}",
                   "less_than_equal": "<= {le}"}
    if kind in comparisons:
        bounds = {k: f"{v:g}" if isinstance(v, int | float) else v for k, v in error.get("ctx", {}).items()}
        return f"must be {comparisons[kind].format(**bounds)} (got {value!r})"
    return f"{str(error['msg'])[:1].lower()}{str(error['msg'])[1:]} (got {value!r})"


def _inner(annotation: Any) -> Any:
    """Annotated[X, ...] -> X; a union -> its first table-like member (a model, list or dict), else None."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _inner(get_args(annotation)[0])
    if origin in (Union, UnionType):
        members = [_inner(a) for a in get_args(annotation)]
        return next((m for m in members if _is_model(m) or get_origin(m) in (list, dict)), None)
    return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str] | None:
    """The keys the table holding `loc`'s last part may have (for an unknown key), or None if not a fixed set."""
    current: Any = model
    for part in loc[:-1]:
        if _is_model(current):
            field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
            current = None if field is None else _inner(field.annotation)
        elif get_origin(current) in (list, dict):
            current = _inner(get_args(current)[-1])
        else:
            return None
    if _is_model(current) and current.model_config.get("extra") == "forbid":
        return [f.alias or n for n, f in current.model_fields.items()]
    return None


def describe(error: ValidationError, file: str, data: Any, overrides: dict[tuple[str, ...], str] | None = None,
             model: type[BaseModel] | None = None) -> str:
    """ONE line for a ValidationError: the file (or the environment variable that set the value), the key
    path, what was wrong (for an unknown key, the keys that table may hold); further problems are counted,
    not listed."""
    problems = [(p, *_key_path(p, data)) for p in error.errors(include_url=False)]
    # an unknown key first: a misspelt key is also reported as the real one missing, and the typo is the cause
    problems.sort(key=lambda p: p[0]["type"] != "extra_forbidden")
    where = problems[0][1]
    # a union's value is reported by the member that got furthest into it (the recipe of a precision table)
    related = [p for p in problems if p[1] == where or p[1].startswith(where + ".")]
    first, where, _ = max(related, key=lambda p: p[2])
    source = file
    for path, variable in (overrides or {}).items():
        if where == ".".join(path):
            source = f"{variable} (environment, over {file})"
    others = {p[1] for p in problems if p[1] != where and not where.startswith(p[1] + ".")}
    more = f" (and {len(others)} more problem(s) in the file)" if others else ""
    what = what_was_wrong(first)
    keys = keys_at(model, tuple(first["loc"])) if model and first["type"] == "extra_forbidden" else None
    if keys:
        close = get_close_matches(str(first["loc"][-1]), keys, n=1)
        what = (f"unknown key (did you mean {close[0]}?)" if close
                else f"unknown key (a typo? the keys here are {', '.join(keys)})")
    return f"{source}: {where}: {what}{more}"


@cache
def _read(path: str, mtime_ns: int) -> dict[str, Any]:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def read_toml(name: str) -> dict[str, Any]:
    """The file's raw tables, or ConfigError: missing, unreadable or not TOML (said in one line)."""
    path = config_file(name)
    try:
        return _read(str(path), path.stat().st_mtime_ns)
    except FileNotFoundError:
        raise ConfigError(f"{shown(path)}: no such file (the configuration folder is {shown(path.parent)}; "
                          "GPUCOST_CONFIG_DIR chooses another)") from None
    except PermissionError:
        raise ConfigError(f"{shown(path)}: permission denied (not readable)") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{shown(path)}: not valid TOML ({error})") from None


def _with_overrides(name: str, raw: dict[str, Any]) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """The file's tables with the environment's overrides applied (tasks.settings.Environment.overrides)."""
    overrides = Environment.current().overrides(name)
    if not overrides:
        return raw, {}
    merged = _deep_copy(raw)
    for path, (_, value) in overrides.items():
        table = merged
        for key in path[:-1]:
            table = table.setdefault(key, {})
        table[path[-1]] = value
    return merged, {path: variable for path, (variable, _) in overrides.items()}


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


@cache
def _validated(name: str, model: type[BaseModel], path: str, mtime_ns: int, environment: tuple[Any, ...]) -> BaseModel:
    raw, overrides = _with_overrides(name, read_toml(name))
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(describe(error, shown(Path(path)), raw, overrides, model)) from None


def load(name: str, model: type[BaseModel] | None = None) -> Any:
    """config/<name>.toml as its typed model (cached until the file or its environment overrides change);
    `model` for a file whose model is not in MODELS (config/fetch.toml: tasks.fetch.config)."""
    if model is None and name not in MODELS:
        raise KeyError(f"no configuration file {name!r} (one of {', '.join(MODELS)})")
    path = config_file(name)
    read_toml(name)  # missing / unreadable / not TOML: said first
    return _validated(name, model or MODELS[name], str(path), path.stat().st_mtime_ns,
                      Environment.current().key(name))


def settings() -> Settings:
    return load("settings")


def sources() -> Sources:
    return load("sources")


def telemetry() -> Telemetry:
    return load("telemetry")


def mlflow_telemetry() -> MlflowTelemetry:
    return load("mlflow_telemetry")


def ranking() -> Ranking:
    return load("ranking")


def models() -> Models:
    return load("models")


def check_all(names: tuple[str, ...] = tuple(MODELS)) -> None:
    """Every config file validated (and the workloads against the ranking), ConfigError at the first problem:
    the command line calls this before any flow starts."""
    for name in names:
        load(name)
    if "workloads" in names:
        from tasks.ranking.workloads import load_workloads

        load_workloads()
