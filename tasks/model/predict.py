"""Contract 2: the champion token-efficiency model, for `gpucost predict` and the ranking.

`load_champion` loads `models:/token-efficiency@champion` (None when there is none); `Champion.predict`
takes telemetry-contract rows (throughput absent or ignored) and returns them with predictions through the
registered pyfunc, which engineers the features itself (tasks.model.contract_rows): exactly what
`mlflow.pyfunc.load_model(...).predict(rows)` returns. `predict_file` reads such rows (CSV or Parquet) and
writes them back with predictions, an 80% interval, the model version, and `unscored_reason` for rows that
cannot be scored.
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

from tasks.contract.schema import Telemetry
from tasks.model.contract_rows import PREDICTION_REQUIRED_COLUMNS, ContractFeatures, contract_frame
from tasks.model.serving import (
    EXTRAPOLATION,
    PREDICTION_COLUMNS,
    UNSCORED_REASON,
    TokenEfficiencyModel,
    score_contract_rows,
)
from tasks.model.tracking import (
    CHAMPION,
    REGISTERED_MODEL,
    connect_tracking,
    version_by_alias,
    was_champion,
)
from tasks.predict_bounds import score_within_bounds
from tasks.reference import ReferenceFiles
from tasks.telemetry.readers import (
    RAW_VALUES,
    SOURCE_LINE,
    TelemetryFileError,
    read_parquet_table,
    read_records,
    separator_hint,
)

log = logging.getLogger("gpucost.predict")

OUTPUT_COLUMNS = (*PREDICTION_COLUMNS, EXTRAPOLATION, "model_version", UNSCORED_REASON)


class NoChampionError(RuntimeError):
    """No version of the token-efficiency model holds the `champion` alias (or it cannot be loaded)."""


@dataclass
class Champion:
    version: str                   # the version actually loaded (what predictions say in model_version)
    pyfunc: Any                    # mlflow.pyfunc.PyFuncModel
    model: TokenEfficiencyModel    # the unwrapped model (spec, intervals, seen GPUs)
    alias_version: str = ""        # the version holding the `champion` alias (differs after a fallback)
    fallback_reason: str | None = None  # why `version` is not the alias's version, when it is not
    # how contract rows become feature rows for a version that does not carry its own (registered before it did)
    features: ContractFeatures | None = None

    @property
    def is_fallback(self) -> bool:
        return self.fallback_reason is not None

    @property
    def candidate(self) -> str:
        return self.model.spec.name

    @property
    def seen_gpus(self) -> tuple[str, ...]:
        return self.model.seen_gpus

    @property
    def takes_contract_rows(self) -> bool:
        """Versions registered before the feature engineering travelled with the model took feature rows."""
        return getattr(self.pyfunc.unwrap_python_model(), "features", None) is not None

    def predict(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Telemetry-contract rows plus predicted_tokens_per_sec_per_gpu, predicted_low, predicted_high (80%
        interval, tokens/s per GPU; null where a row cannot be scored), extrapolation, unscored_reason (why
        not) and model_version."""
        if rows.height == 0:
            return rows.with_columns(*[pl.lit(None, pl.Float64).alias(c) for c in PREDICTION_COLUMNS],
                                     *[pl.lit(None, pl.String).alias(c) for c in (EXTRAPOLATION, UNSCORED_REASON)],
                                     pl.lit(self.version).alias("model_version"))
        if self.takes_contract_rows:
            # through the pyfunc, so the registered signature is enforced exactly as for any MLflow client
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # MLflow's type-hint advice; the signature is the schema
                predicted = self.pyfunc.predict(contract_frame(rows).to_pandas())  # only what the signature names
        else:
            # an older version: the same feature engineering, with the configured reference files
            if self.features is None:
                raise ValueError(f"model version {self.version} takes feature rows: load it with the configured "
                                 "contract features (load_champion)")
            predicted = score_contract_rows(self.model, self.features, rows)
        columns = [pl.Series(name, predicted[name].to_numpy(dtype="float64"), dtype=pl.Float64, nan_to_null=True)
                   for name in PREDICTION_COLUMNS]
        columns += [pl.Series(name, [None if v is None or v != v else str(v) for v in predicted[name]],
                              dtype=pl.String) for name in (EXTRAPOLATION, UNSCORED_REASON)]
        out = rows.drop([c for c in OUTPUT_COLUMNS if c in rows.columns])
        return out.with_columns(*columns, pl.lit(self.version).alias("model_version"))


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


def load_champion(uri: str, features: ContractFeatures) -> Champion | None:
    """The `champion` version of the store `uri`, loaded. When its files cannot be loaded, the newest earlier
    version that loads (former champions first), with a warning naming both. None when there is no store, no model,
    no alias, or nothing loads; never raises for any of those. `features` (ContractFeatures.configured) score
    contract rows for a version registered before the feature engineering travelled with the model."""
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).exists():
        return None  # never create a store just to find it empty
    try:
        tracking = connect_tracking(uri, create_experiment=False)
        champion = version_by_alias(tracking.client, CHAMPION)
    except Exception as error:  # contract: an unreadable registry is "no champion"
        log.warning("champion of %s at %s cannot be loaded: %s", REGISTERED_MODEL, uri, error)
        return None
    if champion is None:
        return None
    broken = str(champion.version)
    try:
        pyfunc, model = _load_version(broken)
        return Champion(version=broken, pyfunc=pyfunc, model=model, alias_version=broken, features=features)
    except Exception as error:  # any failure to load is handled by falling back
        first_error = error
    try:
        candidates = fallback_order(
            list(tracking.client.search_model_versions(f"name = '{REGISTERED_MODEL}'")), broken)
    except Exception as error:  # contract: never raise for a champion that cannot load
        log.warning("champion of %s at %s cannot be loaded: v%s: %s; listing other versions failed: %s",
                    REGISTERED_MODEL, uri, broken, first_error, error)
        return None
    for version in candidates:
        try:
            pyfunc, model = _load_version(str(version.version))
        except Exception:  # try the next one
            continue
        kind = "former champion" if was_champion(version) else "newest earlier version that loads"
        reason = (f"champion v{broken} of {REGISTERED_MODEL} cannot be loaded ({first_error}); "
                  f"using v{version.version} ({kind}) instead")
        log.warning("%s", reason)
        return Champion(version=str(version.version), pyfunc=pyfunc, model=model, alias_version=broken,
                        fallback_reason=reason, features=features)
    log.warning("champion of %s at %s cannot be loaded: v%s: %s; no earlier version loads either",
                REGISTERED_MODEL, uri, broken, first_error)
    return None


class NoRowsError(ValueError):
    """The input has no rows (exit 1: nothing was predicted)."""


class PredictInputError(ValueError):
    """The input file cannot be predicted at all (e.g. a required contract column is missing)."""


def read_rows(path: Path) -> pl.DataFrame:
    """The input rows, read as the telemetry ingest reads a file (CSV and JSON Lines as text: the normaliser
    parses it), but Parquet as typed, so that the output gives the input columns back as they were. A file that
    cannot be read (empty, a line of the wrong number of fields, not UTF-8, a damaged Parquet file) raises
    PredictInputError naming the file and what is wrong."""
    if not path.exists():
        raise FileNotFoundError(f"input file {path} does not exist")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            return read_parquet_table(path)
        return read_records(path).drop(SOURCE_LINE, RAW_VALUES)
    except TelemetryFileError as error:
        raise PredictInputError(f"{path}: {error}") from error


def write_rows(frame: pl.DataFrame, path: Path) -> None:
    suffix = path.suffix.lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        frame.write_csv(path)
    elif suffix in (".parquet", ".pq"):
        frame.write_parquet(path)
    else:
        raise ValueError(f"{path}: unsupported output format {suffix!r} (use .csv or .parquet)")


def predict_rows(rows: pl.DataFrame, champion: Champion) -> pl.DataFrame:
    """Input rows (telemetry contract) -> the same rows plus OUTPUT_COLUMNS (model_version only where scored).
    Never raises for a bad row."""
    predicted = champion.predict(rows)
    scored = pl.col(UNSCORED_REASON).is_null()
    out = rows.drop([c for c in OUTPUT_COLUMNS if c in rows.columns])
    return pl.concat([out, predicted.select(
        *PREDICTION_COLUMNS, EXTRAPOLATION, pl.when(scored).then(pl.col("model_version")).alias("model_version"),
        UNSCORED_REASON)], how="horizontal")


def check_prediction_columns(rows: pl.DataFrame, path: Path) -> None:
    """Every column a prediction needs (the telemetry contract's required columns but run_id and throughput)."""
    missing = [c for c in PREDICTION_REQUIRED_COLUMNS if c not in rows.columns]
    if missing:
        raise PredictInputError(f"{path}: missing required column(s) {', '.join(missing)} "
                                f"(a prediction needs {', '.join(PREDICTION_REQUIRED_COLUMNS)})"
                                f"{separator_hint(rows.columns)}")


def predict_file(input_path: Path | str, output_path: Path | str, tracking_uri: str, telemetry: Telemetry,
                 reference: ReferenceFiles) -> pl.DataFrame:
    """`gpucost predict INPUT -o OUTPUT` with the champion of the store `tracking_uri`; rows outside
    config/telemetry.toml [validation] are not scored; `telemetry` and `reference` (settings.toml [reference])
    engineer the features of a version that does not carry its own. Raises NoChampionError when there is no champion to
    predict with, PredictInputError when the input lacks a column every prediction needs (before loading the model)."""

    rows = read_rows(Path(input_path))
    check_prediction_columns(rows, Path(input_path))
    if rows.height == 0:
        raise NoRowsError(f"{input_path}: no rows to predict (a header only)")
    champion = load_champion(tracking_uri, ContractFeatures.configured(telemetry, reference))
    if champion is None:
        raise NoChampionError(f"no `{CHAMPION}` version of registered model `{REGISTERED_MODEL}` in "
                              f"{tracking_uri}: run `gpucost train` (or `gpucost run`) first")
    result = score_within_bounds(rows, telemetry.validation, lambda inside: predict_rows(inside, champion),
                                 OUTPUT_COLUMNS, UNSCORED_REASON)
    write_rows(result, Path(output_path))
    return result
