"""Training runs in an MLflow tracking server -> rows in the telemetry contract.

A plain reader: tracking URI + experiments + a mapping (config/mlflow_telemetry.toml) + "ended after"
-> one contract-shaped record per finished run (contract fields as text, like the file readers give them,
so the same normalisation, validation and storage apply), each named `mlflow:<run_id>`. Nothing here
touches the warehouse; tasks/telemetry/mlflow_ingest.py feeds the records through the telemetry ingest.

Throughput is taken from the metric HISTORY: the median tokens/s per GPU over the logged points after the
warm-up and outside evaluation pauses; power is the mean of MLflow's GPU power system metrics over the same
intervals. Why a median over points: the first steps (compilation, data loader start-up) and evaluation
pauses are not the steady-state throughput the model learns, and a single logged value hides both.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import re
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import polars as pl

from tasks.contract.schema import MLFLOW_READER_FIELDS as READER_FIELDS
from tasks.contract.schema import REQUIRED_COLUMNS
from tasks.telemetry.config import MlflowTelemetry
from tasks.telemetry.readers import RAW_VALUES, SOURCE_LINE

SOURCE_PREFIX = "mlflow:"
SOURCE_REF = "_source_ref"  # per record: mlflow:<run_id> (what source_file is for a file's rows)
# what a mapping may set besides the contract fields the reader fills in itself
RESERVED_KEYS = ("throughput", "eval_metric_prefixes", "warmup_steps")


class MlflowMappingError(ValueError):
    """The mapping in config/mlflow_telemetry.toml is unusable (unknown mapping, bad field spec)."""


class RunProblem(ValueError):
    """This run cannot become a telemetry row (a required mapped field is missing, no throughput points...)."""


@dataclass(frozen=True)
class MlflowSource:
    """One configured source: which server, which experiments, read with which mapping."""

    tracking_uri: str
    experiments: tuple[str, ...]
    mapping: str


@dataclass
class ListedRuns:
    """Finished runs ended after the watermark, and the runs skipped (still running, failed, killed)."""

    finished: list[Any] = field(default_factory=list)       # mlflow.entities.Run
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (run_id, reason)
    experiment_names: dict[str, str] = field(default_factory=dict)  # experiment_id -> name


@dataclass
class RunRecord:
    """One run as a telemetry record (text values) plus how its throughput and power were measured."""

    run_id: str
    experiment_id: str
    end_time: datetime
    fingerprint: str
    values: dict[str, str | None]
    throughput_points: int | None = None
    power_samples: int | None = None
    problem: str | None = None

    @property
    def source_ref(self) -> str:
        return f"{SOURCE_PREFIX}{self.run_id}"


def redact_uri(uri: str) -> str:
    """The tracking URI without user:password (it is stored and printed)."""
    parts = urlsplit(uri)
    if parts.password is None and parts.username is None:
        return uri
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def load_mapping(name: str, settings: MlflowTelemetry) -> dict[str, Any]:
    """A named mapping of config/mlflow_telemetry.toml (`settings`) with the defaults applied (warm-up,
    evaluation prefixes, power pattern). Its keys and throughput kind were checked when the file was read."""
    if name not in settings.mappings:
        raise MlflowMappingError(
            f"no mapping {name!r} in config/mlflow_telemetry.toml (mappings: {', '.join(sorted(settings.mappings))})"
        )
    chosen, defaults = settings.mappings[name], settings.defaults
    mapping = chosen.model_dump(exclude_unset=True)  # as written: an absent key keeps its reader default
    mapping["warmup_steps"] = chosen.warmup_steps if chosen.warmup_steps is not None else defaults.warmup_steps
    mapping["eval_metric_prefixes"] = [*defaults.eval_metric_prefixes, *chosen.eval_metric_prefixes]
    mapping["_power_pattern"] = re.compile(defaults.power_metric_pattern)
    mapping["_name"] = name
    return mapping


# ------------------------------------------------------------------------------------------------ listing


def _paged(client: Any, experiment_ids: list[str], filter_string: str, page_size: int) -> Iterator[Any]:
    """search_runs page by page (a large experiment never comes back in one response)."""
    token = None
    while True:
        page = client.search_runs(
            experiment_ids, filter_string=filter_string, max_results=page_size,
            order_by=["attributes.end_time ASC"], page_token=token,
        )
        yield from page
        token = page.token
        if not token:
            return


def list_runs(client: Any, experiments: tuple[str, ...], ended_after_ms: dict[str, int], page_size: int) -> ListedRuns:
    """Runs of the experiments (names or ids) that ended after each experiment's watermark (ms since the epoch),
    plus the runs that are still running (skipped: their throughput is not final)."""
    listed = ListedRuns()
    for name in experiments:
        experiment = client.get_experiment_by_name(name)
        if experiment is None and name.isdigit():
            experiment = client.get_experiment(name)
        if experiment is None:
            raise MlflowMappingError(f"no MLflow experiment named {name!r}")
        listed.experiment_names[experiment.experiment_id] = experiment.name
        since = ended_after_ms.get(experiment.experiment_id, -1)
        # MLflow's filter language (not SQL): the watermark is an integer we computed
        for run in _paged(client, [experiment.experiment_id], f"attributes.end_time > {int(since)}", page_size):
            if run.info.status == "FINISHED":
                listed.finished.append(run)
            else:
                listed.skipped.append((run.info.run_id, f"run status {run.info.status}: only finished runs are read"))
        for run in _paged(client, [experiment.experiment_id], "attributes.status = 'RUNNING'", page_size):
            listed.skipped.append((run.info.run_id, "still running: read once it has finished"))
    return listed


def fingerprint(run: Any, mapping_name: str) -> str:
    """SHA-256 of what the run says (ids, end time, params, tags, latest metrics) and the mapping that reads it:
    an unchanged run is recognised without reading its metric history again."""
    data = {
        "run_id": run.info.run_id,
        "end_time": run.info.end_time,
        "params": dict(sorted(run.data.params.items())),
        "tags": dict(sorted(run.data.tags.items())),
        "metrics": dict(sorted(run.data.metrics.items())),
        "mapping": mapping_name,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


# ------------------------------------------------------------------------------------------------ mapping


def _number_text(value: float) -> str:
    """A computed number as text: whole numbers without a decimal point, others to 15 significant digits
    (6.7e9 x 1e-9 is 6.7, not 6.700000000000001)."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e18:
        return str(int(value))
    return format(value, ".15g")


def _as_float(value: str, spec: Any) -> float:
    try:
        return float(value)
    except ValueError as error:
        raise RunProblem(f"{spec!r} is {value!r}, not a number") from error


@dataclass
class _Context:
    params: dict[str, str]
    tags: dict[str, str]
    metrics: dict[str, float]
    fields: dict[str, str | None]
    gpu_count: int | None
    duration_s: float | None


def resolve(spec: Any, ctx: _Context) -> str | None:
    """A field spec (see config/mlflow_telemetry.toml) -> the value as text, or None when it does not resolve."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return _number_text(float(spec))
    if isinstance(spec, str):
        return _resolve_name(spec, ctx)
    if not isinstance(spec, dict):
        raise MlflowMappingError(f"field spec {spec!r} is neither a name nor a table")
    result = _resolve_table(spec, ctx)
    if result is not None and "factor" in spec:
        result = _number_text(_as_float(result, spec) * float(spec["factor"]))
    if result is None and "default" in spec:
        result = str(spec["default"])
    return result


def _resolve_name(spec: str, ctx: _Context) -> str | None:
    """A named spec: params.x, tags.x, metrics.x, field.x, system.gpu_count or run.duration_s."""
    scope, _, name = spec.partition(".")
    if scope == "params":
        return ctx.params.get(name)
    if scope == "tags":
        return ctx.tags.get(name)
    if scope == "metrics":
        value = ctx.metrics.get(name)
        return None if value is None else _number_text(value)
    if scope == "field":
        return ctx.fields.get(name)
    if spec == "system.gpu_count":
        return None if not ctx.gpu_count else str(ctx.gpu_count)
    if spec == "run.duration_s":
        return None if ctx.duration_s is None else _number_text(ctx.duration_s)
    raise MlflowMappingError(
        f"field spec {spec!r}: use params., tags., metrics., field., system.gpu_count or run.duration_s"
    )


def _resolve_table(spec: dict[str, Any], ctx: _Context) -> str | None:
    """A table spec's value, before its factor and default: value, first, product or from (with its map)."""
    if "value" in spec:
        return str(spec["value"])
    if "first" in spec:
        return next((v for v in (resolve(s, ctx) for s in spec["first"]) if v is not None), None)
    if "product" in spec:
        values = [resolve(s, ctx) for s in spec["product"]]
        resolved = [v for v in values if v is not None]
        if len(resolved) < len(values):
            return None
        product = 1.0
        for s, v in zip(spec["product"], resolved, strict=True):
            product *= _as_float(v, s)
        return _number_text(product)
    if "from" in spec:
        result = resolve(spec["from"], ctx)
        if result is not None and "map" in spec:
            mapped: str | None = spec["map"].get(result)
            return mapped
        return result
    raise MlflowMappingError(f"field spec {spec!r}: a table needs value, first, product or from")


def _describe(spec: Any) -> str:
    return spec if isinstance(spec, str) else json.dumps(spec)


# ------------------------------------------------------------------------------------------------ history


@dataclass(frozen=True)
class Point:
    step: int
    timestamp_ms: int
    value: float


def history(client: Any, run_id: str, key: str) -> list[Point]:
    """A metric's history in time order (the last value logged at a step wins)."""
    points = sorted(
        (Point(int(m.step), int(m.timestamp), float(m.value)) for m in client.get_metric_history(run_id, key)),
        key=lambda p: (p.timestamp_ms, p.step),
    )
    by_step: dict[int, Point] = {}
    for p in points:
        by_step[p.step] = p
    return sorted(by_step.values(), key=lambda p: (p.timestamp_ms, p.step))


@dataclass
class Throughput:
    tokens_per_sec_per_gpu: float
    points: int
    intervals: list[tuple[int, int]]  # (start, end] in ms of the points used: the power window


def steady_throughput(
    points: list[Point], kind: str, num_gpus: float, per_gpu: bool, tokens_per_step: float | None,
    warmup_steps: int, eval_timestamps_ms: list[int],
) -> Throughput:
    """Median tokens/s per GPU over the points after the warm-up and outside evaluation pauses.

    Each point stands for the interval since the previous logged point; a point is dropped when its step is
    <= warmup_steps or when an evaluation metric was logged inside its interval (the pause is in it)."""
    rates: list[float] = []
    intervals: list[tuple[int, int]] = []
    evals = sorted(eval_timestamps_ms)
    for index, point in enumerate(points):
        previous = points[index - 1] if index else None
        start = previous.timestamp_ms if previous else None
        if kind == "counter":
            if previous is None or point.timestamp_ms <= previous.timestamp_ms:
                continue
            if point.value < previous.value:
                continue  # the counter restarted (a resumed run that does not restore it): no interval to measure
            rate = (point.value - previous.value) / ((point.timestamp_ms - previous.timestamp_ms) / 1000.0)
        elif kind == "step_time":
            rate = (tokens_per_step or 0.0) / point.value if point.value > 0 else 0.0
        else:  # rate
            rate = point.value
        if not per_gpu:
            rate /= num_gpus
        if point.step <= warmup_steps:
            continue
        low = start if start is not None else -1
        first_eval_after = bisect.bisect_right(evals, low)
        if first_eval_after < len(evals) and evals[first_eval_after] <= point.timestamp_ms:
            continue  # an evaluation ran inside this interval
        rates.append(rate)
        if start is not None:
            intervals.append((start, point.timestamp_ms))
    if not rates:
        raise RunProblem(
            f"no throughput points after the warm-up ({warmup_steps} steps) outside evaluation pauses "
            f"({len(points)} logged)"
        )
    return Throughput(statistics.median(rates), len(rates), intervals)


def mean_power(series: list[list[Point]], intervals: list[tuple[int, int]]) -> tuple[float | None, int]:
    """Mean of every GPU's power samples whose timestamp falls in one of the intervals -> (W per GPU, samples)."""
    if not intervals:
        return None, 0
    starts = [s for s, _ in sorted(intervals)]
    ordered = sorted(intervals)
    values: list[float] = []
    for points in series:
        for p in points:
            i = bisect.bisect_left(starts, p.timestamp_ms) - 1  # last interval starting before the sample
            if i >= 0 and ordered[i][0] < p.timestamp_ms <= ordered[i][1]:
                values.append(p.value)
    return (statistics.fmean(values) if values else None), len(values)


# ------------------------------------------------------------------------------------------------ a run


def _metric_key(names: Any, logged: dict[str, float]) -> str | None:
    for name in [names] if isinstance(names, str) else list(names):
        if name in logged:
            return name
    return None


def read_run(client: Any, run: Any, mapping: dict[str, Any], experiment_name: str) -> RunRecord:
    """One finished run -> its telemetry record (or the reason it cannot be one, in `problem`)."""
    info, data = run.info, run.data
    end_time = datetime.fromtimestamp(info.end_time / 1000.0, tz=UTC)
    record = RunRecord(
        run_id=info.run_id, experiment_id=info.experiment_id, end_time=end_time,
        fingerprint=fingerprint(run, mapping["_name"]), values={},
    )
    power_keys = sorted(k for k in data.metrics if mapping["_power_pattern"].match(k))
    ctx = _Context(
        params=dict(data.params), tags=dict(data.tags), metrics=dict(data.metrics), fields={},
        gpu_count=len(power_keys) or None,
        duration_s=(info.end_time - info.start_time) / 1000.0 if info.start_time else None,
    )
    values: dict[str, str | None] = {
        "run_id": info.run_id,
        "recorded_at": end_time.isoformat(),
        # source_group (the CV group) is the part before ":" -> one group per experiment
        "source": f"mlflow/{experiment_name}:{info.run_id}",
        "mlflow_experiment": experiment_name,
        "mlflow_mapping": mapping["_name"],
    }
    record.values = values
    try:
        for name, spec in mapping.items():
            if name in RESERVED_KEYS or name.startswith("_"):
                continue
            if name in READER_FIELDS:
                raise MlflowMappingError(f"mapping {mapping['_name']!r} sets {name}, which the reader derives itself")
            values[name] = ctx.fields[name] = resolve(spec, ctx)
        missing = [c for c in REQUIRED_COLUMNS if c not in READER_FIELDS and values.get(c) is None]
        if missing:
            raise RunProblem("; ".join(
                f"missing mapped field {c} ({_describe(mapping[c]) if c in mapping else 'not mapped'})" for c in missing
            ))
        _throughput_and_power(client, run, mapping, ctx, record, power_keys)
    except RunProblem as problem:
        record.problem = str(problem)
    return record


def _throughput_and_power(
    client: Any, run: Any, mapping: dict[str, Any], ctx: _Context, record: RunRecord, power_keys: list[str]
) -> None:
    spec = mapping["throughput"]
    kind = spec["kind"]
    values = record.values
    num_gpus_text = values["num_gpus"]
    if num_gpus_text is None:  # said before: num_gpus is a required field
        raise RunProblem("num_gpus is missing")
    num_gpus = _as_float(num_gpus_text, "num_gpus")
    if num_gpus <= 0:
        raise RunProblem(f"num_gpus is {values['num_gpus']}")
    if kind == "totals":
        values["tokens_processed"] = resolve(spec.get("tokens"), ctx)
        values["wall_seconds"] = resolve(spec.get("seconds", "run.duration_s"), ctx)
        if values["tokens_processed"] is None or values["wall_seconds"] is None:
            raise RunProblem(f"throughput totals not logged ({_describe(spec.get('tokens'))}, wall seconds)")
        return
    key = _metric_key(spec.get("metric"), ctx.metrics)
    if key is None:
        raise RunProblem(f"throughput metric {_describe(spec.get('metric'))} not logged")
    tokens_per_step = None
    if kind == "step_time":
        text = resolve(spec.get("tokens_per_step"), ctx)
        if text is None:
            raise RunProblem(f"missing tokens per step ({_describe(spec.get('tokens_per_step'))})")
        tokens_per_step = _as_float(text, "tokens_per_step")
    prefixes = tuple(mapping["eval_metric_prefixes"])
    eval_keys = [k for k in ctx.metrics if prefixes and k.startswith(prefixes)]
    eval_timestamps = [p.timestamp_ms for k in eval_keys for p in history(client, record.run_id, k)]
    measured = steady_throughput(
        history(client, record.run_id, key), kind, num_gpus, bool(spec.get("per_gpu", False)), tokens_per_step,
        mapping["warmup_steps"], eval_timestamps,
    )
    values["tokens_per_sec_per_gpu"] = format(measured.tokens_per_sec_per_gpu, ".15g")
    record.throughput_points = measured.points
    watts, samples = mean_power([history(client, record.run_id, k) for k in power_keys], measured.intervals)
    values["avg_power_w"] = None if watts is None else format(watts, ".15g")
    record.power_samples = samples if power_keys else None
    values["throughput_points"] = str(measured.points)
    values["power_samples"] = None if record.power_samples is None else str(samples)


# ------------------------------------------------------------------------------------------------ frames


def records_frame(records: list[RunRecord]) -> pl.DataFrame:
    """Records as the file readers give them: text columns, SOURCE_LINE (1) and RAW_VALUES (the record as JSON),
    plus SOURCE_REF (mlflow:<run_id>) naming where each row came from."""
    columns: dict[str, None] = {}
    for r in records:
        columns.update(dict.fromkeys(r.values))
    data: dict[str, list[Any]] = {c: [r.values.get(c) for r in records] for c in columns}
    data[SOURCE_LINE] = [1] * len(records)
    data[RAW_VALUES] = [json.dumps(r.values) for r in records]
    data[SOURCE_REF] = [r.source_ref for r in records]
    schema = {c: pl.String for c in columns} | {SOURCE_LINE: pl.Int64, RAW_VALUES: pl.String, SOURCE_REF: pl.String}
    return pl.DataFrame(data, schema=schema)


def read_mlflow_runs(
    tracking_uri: str, experiments: tuple[str, ...], mapping_name: str, settings: MlflowTelemetry,
    ended_after_ms: dict[str, int] | None = None,
) -> tuple[pl.DataFrame, list[RunRecord], ListedRuns]:
    """The whole reader in one call: finished runs ended after the watermarks -> (contract-shaped frame of the
    readable runs, every run's record incl. problems, what was listed and skipped)."""
    from mlflow.tracking import MlflowClient

    mapping = load_mapping(mapping_name, settings)
    client = MlflowClient(tracking_uri)
    listed = list_runs(client, experiments, ended_after_ms or {}, settings.defaults.page_size)
    names = listed.experiment_names
    records = [read_run(client, run, mapping, names[run.info.experiment_id]) for run in listed.finished]
    readable = [r for r in records if r.problem is None]
    return records_frame(readable), records, listed
