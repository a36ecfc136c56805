"""Rank every current offer for every workload: memory fit -> cluster sizes -> champion throughput ->
cost (sql/marts/*.sql, formulas in sql/ddl/070_marts_cost_model.sql) -> marts.gpu_cost_ranking_history."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Protocol

import duckdb
import polars as pl

from tasks.ranking.config import Ranking
from tasks.ranking.workloads import require_workloads
from tasks.warehouse import execute, query, registered, row_order_free, transaction

PREDICTION_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "predicted_tokens_per_sec_per_gpu": pl.Float64(),
    "predicted_low": pl.Float64(),
    "predicted_high": pl.Float64(),
    "extrapolation": pl.String(),      # what the prediction extrapolates ("" = nothing)
    "model_version": pl.String(),
}

# Neutral on purpose: load_champion returns None both when no champion is registered and when one exists
# but cannot be loaded (its log says which); the ranking cannot tell the two apart. No colon before the
# last one: the night's summary groups reasons by their first clause (sql/marts/ranking_night_summary.sql).
NO_CHAMPION_REASON = (
    "no loadable champion model in MLflow (none registered, or it failed to load, see the log; "
    "`gpucost train` registers one): throughput cannot be predicted"
)


class NoOffersError(RuntimeError):
    """The warehouse has no current offer: a night would publish an empty ranking."""


class ThroughputModel(Protocol):
    """What the ranking needs of contract 2's Champion (tasks.model.predict)."""

    version: str

    def predict(self, rows: pl.DataFrame) -> pl.DataFrame: ...


@dataclass
class RankingResult:
    publish_date: date
    model_version: str | None
    rows: int = 0
    ranked: int = 0
    predictions: int = 0
    not_ranked_by_reason: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # said loudly: summary, artifact, nightly outcome


def predict_runs(runs: pl.DataFrame, champion: ThroughputModel | None) -> pl.DataFrame:
    """Champion throughput per run_id (PREDICTION_SCHEMA); empty without a champion or runs. The runs are
    telemetry-contract rows: the champion engineers their features itself (tasks.model.contract_rows), as for
    `gpucost predict`."""
    if champion is None or runs.is_empty():
        return pl.DataFrame(schema=PREDICTION_SCHEMA)
    predicted = champion.predict(runs)
    if "model_version" not in predicted.columns:
        predicted = predicted.with_columns(model_version=pl.lit(champion.version))
    if "extrapolation" not in predicted.columns:  # a ThroughputModel that does not say
        predicted = predicted.with_columns(extrapolation=pl.lit(None, pl.String))
    return predicted.select(
        [pl.col(name).cast(dtype) for name, dtype in PREDICTION_SCHEMA.items()]
    )


def interruption_rates(config: Ranking) -> pl.DataFrame:
    rates = {k: v for k, v in config.spot.interruption_rate_per_hour.items() if k != "default"}
    return pl.DataFrame(
        {"provider": list(rates), "interruption_rate_per_hour": [float(v) for v in rates.values()]},
        schema={"provider": pl.String(), "interruption_rate_per_hour": pl.Float64()},
    )


def storage_prices(config: Ranking) -> pl.DataFrame:
    """config/ranking.toml [checkpoints]: per provider, the price-list storage type that holds checkpoints
    and the configured USD per GB-month (used where the price lists carry none)."""
    types = dict(config.checkpoints.price_list_storage_type)
    prices = {k: v for k, v in config.checkpoints.usd_per_gb_month.items() if k != "default"}
    providers = sorted(set(types) | set(prices))
    return pl.DataFrame(
        {
            "provider": providers,
            "storage_type": [types.get(p) for p in providers],
            "usd_per_gb_month": [prices.get(p) for p in providers],
        },
        schema={"provider": pl.String(), "storage_type": pl.String(), "usd_per_gb_month": pl.Float64()},
    )


def owned_carbon(config: Ranking) -> pl.DataFrame:
    """config/ranking.toml [carbon] owned_gco2e_per_kwh: owned sites' grid intensity (g CO2e per kWh)."""
    sites = config.carbon.owned_gco2e_per_kwh
    return pl.DataFrame(
        {"region": list(sites), "grid_gco2e_per_kwh": [float(v) for v in sites.values()]},
        schema={"region": pl.String(), "grid_gco2e_per_kwh": pl.Float64()},
    )


def workload_batches(workloads: pl.DataFrame, offers: int, rows_per_batch: int) -> list[pl.DataFrame]:
    """Workloads in name order, in batches of about `rows_per_batch` workload x offer rows (at least one
    workload each): every step's intermediate tables then hold one batch, whatever the number of workloads."""
    ordered = workloads.sort("workload")
    per_batch = max(1, rows_per_batch // max(offers, 1))
    return [ordered.slice(i, per_batch) for i in range(0, ordered.height, per_batch)] or [ordered]


def offer_batches(offers: int, rows_per_batch: int) -> int:
    """How many batches the offers are ranked in (sql/marts/ranking_offers.sql), so that one workload x one batch
    of offers is about `rows_per_batch` rows however many offers there are: 1 up to `rows_per_batch` offers."""
    return max(1, -(-offers // max(rows_per_batch, 1)))


def rank_offers(
    con: duckdb.DuckDBPyConnection,
    champion: ThroughputModel | None,
    publish_date: date,
    published_at: datetime,
    *,
    workloads: pl.DataFrame,
    config: Ranking,
    gpu_specs_file: str,
) -> RankingResult:
    """Write the night's rows into marts.gpu_cost_ranking_history (replacing that date's) and summarise.

    Ranks are per workload, so workloads are ranked in batches (config/ranking.toml [compute]) and the
    night is written in one transaction: readers see all of it or none of it. `workloads`: the rows of
    tasks.ranking.workloads.load_workloads; `gpu_specs_file` names the specs file in the "no spec row" reason
    (config/settings.toml [reference] gpu_specs)."""
    require_workloads(workloads)
    result = RankingResult(publish_date=publish_date, model_version=champion.version if champion else None)
    if champion is None:
        result.messages.append(NO_CHAMPION_REASON + "; prices and specs are still published.")
    spot, energy = config.spot, config.energy
    params = {  # sql/marts/insert_ranking.sql
        "publish_date": publish_date,
        "published_at": published_at,
        "model_version": champion.version if champion else None,
        "no_model_reason": None if champion else NO_CHAMPION_REASON,
        "history_window_days": spot.history_window_days,
        "resale_fraction": config.commitments.resale_fraction,
    }
    terms_params = {  # sql/marts/ranking_terms.sql
        "default_interruption_rate": spot.interruption_rate_per_hour["default"],
        "checkpoint_interval_minutes": spot.checkpoint_interval_minutes,
        "restart_minutes": spot.restart_minutes,
        "utilisation_of_tdp": energy.utilisation_of_tdp,
        "cloud_pue": energy.cloud_pue,
        "owned_pue": energy.owned_pue,
        "resale_fraction": config.commitments.resale_fraction,
    }
    candidate_params = {
        "gpu_specs_file": gpu_specs_file,
        "publish_date": publish_date,
        "max_price_age_days": config.prices.max_price_age_days,
        "default_storage_usd_per_gb_month": config.checkpoints.usd_per_gb_month.get("default", 0.0),
        "default_scale_out_gbps_per_gpu": config.machines.default_scale_out_gbps_per_gpu,
    }
    offers = query(con, "marts/current_offer_count").fetchall()[0][0]
    if offers == 0:
        raise NoOffersError("the warehouse has no current price offer (core.prices_current is empty): nothing to "
                            "rank; nothing was published and the previous night stays served (run `gpucost ingest "
                            "prices` first)")
    batches = workload_batches(workloads, offers, config.compute.rows_per_batch)
    parts = offer_batches(offers, config.compute.rows_per_batch) if len(batches) == workloads.height else 1
    with (
        registered(con, "ranking_interruption_rates", interruption_rates(config)),
        registered(con, "ranking_storage_prices", storage_prices(config)),
        registered(con, "ranking_owned_carbon", owned_carbon(config)),
        row_order_free(con),
        transaction(con),
    ):
        execute(con, "marts/delete_ranking_night", {"publish_date": publish_date})
        execute(con, "marts/delete_ranking_gpu_specs", {"publish_date": publish_date})
        execute(con, "marts/insert_ranking_gpu_specs", {"publish_date": publish_date})
        execute(con, "marts/ranking_offers", {"offer_batches": parts})
        for batch in batches:
            with registered(con, "ranking_workloads", batch):
                _rank_workloads(con, champion, parts, {"offers": candidate_params, "terms": terms_params,
                                                        "rows": params}, result)
        execute(con, "marts/drop_ranking_tables")
    night = query(con, "marts/ranking_night_summary", {"publish_date": publish_date}).fetchall()
    for reason, count in night:
        result.rows += count
        if reason is None:
            result.ranked += count
        else:
            result.not_ranked_by_reason[reason] = count
    lost = query(con, "marts/workloads_lost_tonight", {"publish_date": publish_date}).fetchall()
    for workload, night, before, _ in lost:
        result.warnings.append(f"WARNING: workload {workload} had {before} ranked offers on {night} and has none "
                               "tonight (see not_ranked_reason in gpu_cost_ranking)")
    return result


def _rank_workloads(con: duckdb.DuckDBPyConnection, champion: ThroughputModel | None, parts: int,
                    params: Mapping[str, Mapping[str, object]], result: RankingResult) -> None:
    """Rank the registered batch of workloads (`ranking_workloads`) over every offer, `parts` batches of offers at a
    time: first every batch's rank keys (what each ranked choice is ranked by), then the ranks, then every batch's
    rows with their ranks. `params`: the bound parameters of offer_candidates ("offers"), ranking_terms ("terms") and
    insert_ranking ("rows"). A batch's tables are rebuilt for the second pass, except the last one built (the passes
    run in opposite orders), so one batch of offers is built once."""
    predicted = pl.DataFrame(schema=PREDICTION_SCHEMA)  # per run_id, predicted once for the workloads
    built: int | None = None

    def build(part: int) -> None:
        nonlocal predicted, built
        if built == part:
            return
        execute(con, "marts/offer_candidates", {**params["offers"], "offer_batch": part})
        execute(con, "marts/cluster_ladder")
        runs = query(con, "marts/prediction_runs").pl()
        new = runs.join(predicted.select("run_id"), on="run_id", how="anti")
        if not new.is_empty():
            fresh = predict_runs(new, champion)
            result.predictions += fresh.height
            predicted = pl.concat([predicted, fresh])
        with registered(con, "ranking_predictions", predicted):
            execute(con, "marts/ranking_rungs")
        execute(con, "marts/ranking_terms", params["terms"])
        execute(con, "marts/ranking_picked")
        built = part

    execute(con, "marts/create_ranking_keys")
    for part in range(parts):
        build(part)
        execute(con, "marts/insert_ranking_keys")
    execute(con, "marts/ranking_key_ranks")
    for part in reversed(range(parts)):
        build(part)
        execute(con, "marts/insert_ranking", params["rows"])
