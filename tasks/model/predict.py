"""Contract 2: the champion token-efficiency model, for `gpucost predict` and the ranking.

`load_champion()` loads `models:/token-efficiency@champion` (None when there is none); `Champion.predict`
takes rows shaped like `tasks.features.build_features` output; `predict_file` reads telemetry-contract rows
(CSV or Parquet, throughput absent or ignored) and writes them back with predictions, an 80% interval, the
model version, and `unscored_reason` for rows that cannot be scored.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlflow
import polars as pl
from mlflow.entities.model_registry import ModelVersion

from tasks.model.serving import EXTRAPOLATION, PREDICTION_COLUMNS, TokenEfficiencyModel
from tasks.model.tracking import (
    CHAMPION,
    REGISTERED_MODEL,
    connect_tracking,
    tracking_uri,
    version_by_alias,
    was_champion,
)
from tasks.telemetry.contract import REQUIRED_COLUMNS

log = logging.getLogger("gpucost.predict")

OUTPUT_COLUMNS = (*PREDICTION_COLUMNS, EXTRAPOLATION, "model_version", "unscored_reason")
# Throughput columns of a prediction input are ignored (never passed to the features).
# What a prediction needs: the contract's required columns except the run id (throughput is what it predicts).
PREDICTION_REQUIRED_COLUMNS = tuple(c for c in REQUIRED_COLUMNS if c != "run_id")
IGNORED_INPUT_COLUMNS = ("tokens_per_sec_per_gpu", "tokens_processed", "wall_seconds", "mfu")
# GPU spec columns a model may need beyond the peak (the structured model: memory bandwidth for memory-bound work)
SPEC_COLUMNS = ("peak_tflops", "mem_bandwidth_tbps")


class NoChampionError(RuntimeError):
    """No version of the token-efficiency model holds the `champion` alias (or it cannot be loaded)."""


@dataclass
class Champion:
    version: str                   # the version actually loaded (what predictions say in model_version)
    pyfunc: Any                    # mlflow.pyfunc.PyFuncModel
    model: TokenEfficiencyModel    # the unwrapped model (spec, intervals, seen GPUs)
    alias_version: str = ""        # the version holding the `champion` alias (differs after a fallback)
    fallback_reason: str | None = None  # why `version` is not the alias's version, when it is not

    @property
    def is_fallback(self) -> bool:
        return self.fallback_reason is not None

    @property
    def candidate(self) -> str:
        return self.model.spec.name

    @property
    def seen_gpus(self) -> tuple[str, ...]:
        return self.model.seen_gpus

    def predict(self, features: pl.DataFrame) -> pl.DataFrame:
        """`features` plus predicted_tokens_per_sec_per_gpu, predicted_low, predicted_high (80% interval,
        tokens/s per GPU; null where the row has no physics bound) and model_version."""
        if features.height == 0:
            return features.with_columns(
                *[pl.lit(None, pl.Float64).alias(c) for c in PREDICTION_COLUMNS],
                pl.lit(None, pl.String).alias(EXTRAPOLATION), pl.lit(self.version).alias("model_version"))
        # through the pyfunc, so the registered signature is enforced exactly as for any MLflow client
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # MLflow's type-hint advice; the signature is the schema
            predicted = self.pyfunc.predict(self.model.model_input(features))
        columns = [pl.Series(name, predicted[name].to_numpy(dtype="float64"), dtype=pl.Float64, nan_to_null=True)
                   for name in PREDICTION_COLUMNS]
        # versions trained before extrapolation flags only know seen / unseen GPUs
        flags = (predicted[EXTRAPOLATION].astype(str).tolist() if EXTRAPOLATION in predicted.columns
                 else ["" if g in self.seen_gpus else "unseen_gpu" for g in features["gpu"].to_list()])
        columns.append(pl.Series(EXTRAPOLATION, flags, dtype=pl.String))
        return features.with_columns(*columns, pl.lit(self.version).alias("model_version"))


def _load_version(version: str) -> tuple[Any, TokenEfficiencyModel]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # MLflow's type-hint advice; the signature is the schema
        pyfunc = mlflow.pyfunc.load_model(f"models:/{REGISTERED_MODEL}/{version}")
    return pyfunc, pyfunc.unwrap_python_model().model


def fallback_order(versions: list[ModelVersion], broken: str) -> list[ModelVersion]:
    """Versions to try instead of a champion that cannot load: those registered before it, former champions
    first (tag `was_champion`, or promoted at registration), each group newest first."""
    earlier = [v for v in versions if int(v.version) < int(broken)]
    return sorted(earlier, key=lambda v: (not was_champion(v), -int(v.version)))


def load_champion(tracking_uri_: str | None = None) -> Champion | None:
    """The `champion` version, loaded. When its files cannot be loaded, the newest earlier version that loads
    (former champions first), with a warning naming both. None when there is no store, no model, no alias,
    or nothing loads; never raises for any of those."""
    uri = tracking_uri(tracking_uri_)
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).exists():
        return None  # never create a store just to find it empty
    try:
        tracking = connect_tracking(uri, create_experiment=False)
        champion = version_by_alias(tracking.client, CHAMPION)
    except Exception as error:  # noqa: BLE001 - contract: an unreadable registry is "no champion"
        log.warning("champion of %s at %s cannot be loaded: %s", REGISTERED_MODEL, uri, error)
        return None
    if champion is None:
        return None
    broken = str(champion.version)
    try:
        pyfunc, model = _load_version(broken)
        return Champion(version=broken, pyfunc=pyfunc, model=model, alias_version=broken)
    except Exception as error:  # noqa: BLE001 - any failure to load is handled by falling back
        first_error = error
    try:
        candidates = fallback_order(
            list(tracking.client.search_model_versions(f"name = '{REGISTERED_MODEL}'")), broken)
    except Exception as error:  # noqa: BLE001 - contract: never raise for a champion that cannot load
        log.warning("champion of %s at %s cannot be loaded: v%s: %s; listing other versions failed: %s",
                    REGISTERED_MODEL, uri, broken, first_error, error)
        return None
    for version in candidates:
        try:
            pyfunc, model = _load_version(str(version.version))
        except Exception:  # noqa: BLE001 - try the next one
            continue
        kind = "former champion" if was_champion(version) else "newest earlier version that loads"
        reason = (f"champion v{broken} of {REGISTERED_MODEL} cannot be loaded ({first_error}); "
                  f"using v{version.version} ({kind}) instead")
        log.warning("%s", reason)
        return Champion(version=str(version.version), pyfunc=pyfunc, model=model, alias_version=broken,
                        fallback_reason=reason)
    log.warning("champion of %s at %s cannot be loaded: v%s: %s; no earlier version loads either",
                REGISTERED_MODEL, uri, broken, first_error)
    return None


def read_rows(path: Path) -> pl.DataFrame:
    """CSV (every value as text: normalise_runs parses it) or Parquet."""
    suffix = path.suffix.lower()
    if not path.exists():
        raise FileNotFoundError(f"input file {path} does not exist")
    if suffix == ".csv":
        return pl.read_csv(path, infer_schema=False)
    if suffix in (".parquet", ".pq"):
        return pl.read_parquet(path)
    raise ValueError(f"{path}: unsupported input format {suffix!r} (use .csv or .parquet)")


def write_rows(frame: pl.DataFrame, path: Path) -> None:
    suffix = path.suffix.lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        frame.write_csv(path)
    elif suffix in (".parquet", ".pq"):
        frame.write_parquet(path)
    else:
        raise ValueError(f"{path}: unsupported output format {suffix!r} (use .csv or .parquet)")


def unscored_reasons(runs: pl.DataFrame, features: pl.DataFrame) -> list[str | None]:
    """Why each row cannot be scored (None when it can). `runs` are normalise_runs output and `features`
    build_features output for the same rows, in the same order."""
    reasons: list[str | None] = []
    for run, feature in zip(runs.iter_rows(named=True), features.iter_rows(named=True), strict=True):
        problems = []
        if run.get("gpu_name") is None:
            problems.append("no gpu given")
        elif run.get("gpu") is None:
            problems.append(f"unknown GPU {run['gpu_name']!r} (not in gpu_aliases.csv)")
        if run.get("precision_name") is None:
            problems.append("no precision given")
        elif run.get("precision") is None:
            problems.append(f"unknown precision {run['precision_name']!r}")
        if run.get("unparsed_fields"):
            problems.append(f"unreadable values: {run['unparsed_fields']}")
        for column, rule in (("num_gpus", "at least 1"), ("params_b", "above 0"), ("seq_len", "above 0")):
            value = run.get(column)
            if value is None:
                if f"{column}=" not in (run.get("unparsed_fields") or ""):
                    problems.append(f"missing {column}")
            elif value <= 0 or (column == "num_gpus" and value < 1):
                problems.append(f"{column} must be {rule}")
        if not problems:
            if feature.get("gpu_memory_gb") is None and feature.get("peak_tflops") is None:
                problems.append(f"no spec row for GPU {run['gpu']!r} in gpu_specs.csv")
            elif feature.get("peak_tflops") is None:
                problems.append(f"no dense {run['precision']} peak for {run['gpu']} in gpu_specs.csv")
            elif feature.get("physics_bound_tokens_per_sec_per_gpu") is None:
                problems.append("physics bound cannot be computed (FLOPs per token unknown)")
        reasons.append("; ".join(problems) or None)
    return reasons


def predict_rows(rows: pl.DataFrame, champion: Champion) -> pl.DataFrame:
    """Input rows (telemetry contract) -> the same rows plus OUTPUT_COLUMNS. Never raises for a bad row."""
    from tasks.features import build_features
    from tasks.reference import load_reference_tables, read_aliases
    from tasks.telemetry.normalise import normalise_runs
    from tasks.warehouse import connect

    runs = normalise_runs(rows.drop([c for c in IGNORED_INPUT_COLUMNS if c in rows.columns]), read_aliases())
    # an in-memory database with the reference tables: prediction never locks the working warehouse
    con = connect(Path(":memory:"))
    try:
        load_reference_tables(con)
        features = build_features(con, runs)
    finally:
        con.close()
    reasons = unscored_reasons(runs, features)
    scorable = pl.Series([r is None for r in reasons], dtype=pl.Boolean)
    scored = champion.predict(features.with_row_index("_row").filter(scorable))
    predictions = (
        pl.DataFrame({"_row": pl.arange(0, rows.height, eager=True, dtype=pl.UInt32)})
        .join(scored.select("_row", *PREDICTION_COLUMNS, EXTRAPOLATION, "model_version"), on="_row", how="left",
              maintain_order="left")
        .drop("_row")
    )
    # a row the checks above let through but the model could not score (e.g. the structured model needs the
    # GPU's memory bandwidth, which a spec row may lack) says so instead of carrying a silent null
    predicted = predictions["predicted_tokens_per_sec_per_gpu"].to_list()
    for i, (reason, value) in enumerate(zip(reasons, predicted, strict=True)):
        if reason is None and value is None:
            row = features.row(i, named=True)
            missing = [c for c in SPEC_COLUMNS if row.get(c) is None]
            reasons[i] = (f"no prediction: {', '.join(missing)} of {row['gpu']} missing in gpu_specs.csv" if missing
                          else "no prediction: the model returned none for this row")
    out = rows.drop([c for c in OUTPUT_COLUMNS if c in rows.columns])
    reason = pl.DataFrame({"unscored_reason": reasons}, schema={"unscored_reason": pl.String})
    return pl.concat([out, predictions, reason], how="horizontal")


class PredictInputError(ValueError):
    """The input file cannot be predicted at all (e.g. a required contract column is missing)."""


def check_prediction_columns(rows: pl.DataFrame, path: Path) -> None:
    """Every column a prediction needs (the telemetry contract's required columns but run_id and throughput)."""
    missing = [c for c in PREDICTION_REQUIRED_COLUMNS if c not in rows.columns]
    if missing:
        raise PredictInputError(f"{path}: missing required column(s) {', '.join(missing)} "
                                f"(a prediction needs {', '.join(PREDICTION_REQUIRED_COLUMNS)})")


def predict_file(input_path: Path | str, output_path: Path | str, tracking_uri_: str | None = None) -> pl.DataFrame:
    """`gpucost predict INPUT -o OUTPUT`. Raises NoChampionError when there is no champion to predict with,
    PredictInputError when the input lacks a column every prediction needs (before loading the model)."""
    rows = read_rows(Path(input_path))
    check_prediction_columns(rows, Path(input_path))
    champion = load_champion(tracking_uri_)
    if champion is None:
        raise NoChampionError(f"no `{CHAMPION}` version of registered model `{REGISTERED_MODEL}` in "
                              f"{tracking_uri(tracking_uri_)}: run `gpucost train` (or `gpucost run`) first")
    result = predict_rows(rows, champion)
    write_rows(result, Path(output_path))
    return result
