"""Publish at scale (issue 41): the ranking is built one workload x one batch of offers at a time, so its per-batch
tables stay about config/ranking.toml [compute] rows_per_batch rows however many offers there are (2.4 M extra
offers ran DuckDB out of memory with a whole workload's offers in one table), with the same rows and ranks."""

from __future__ import annotations

from datetime import UTC, date, datetime

import tasks.ranking.rank as rank
from tasks.ranking.rank import offer_batches, rank_offers
from tasks.ranking.workloads import load_workloads
from tests import configured
from tests.ranking.conftest import FixedThroughput

NIGHT = date(2026, 1, 6)
AT = datetime(2026, 1, 6, 2, 0, tzinfo=UTC)
WORKLOADS = {"workloads": [
    {"name": "tiny-sft", "workload": "sft", "params_b": 1.0, "n_layers": 16, "d_model": 2048, "seq_len": 2048,
     "precision": "bf16", "optimizer": "adamw", "token_budget": 36_000_000},
    {"name": "small-pretrain", "workload": "pretrain", "params_b": 7.0, "n_layers": 32, "d_model": 4096,
     "seq_len": 4096, "precision": "bf16", "optimizer": "adamw", "token_budget": 1e10, "deadline_hours": 2000},
]}


def test_offer_batches_by_hand() -> None:
    assert offer_batches(0, 500_000) == 1
    assert offer_batches(500_000, 500_000) == 1
    assert offer_batches(500_001, 500_000) == 2
    assert offer_batches(1_188_526, 500_000) == 3   # 1.2 M extra offers: three batches of ~400,000
    assert offer_batches(2_400_000, 500_000) == 5


def night_rows(con) -> list[tuple]:
    return con.sql("select * exclude (published_at) from marts.gpu_cost_ranking_history where publish_date = $night "
                   "order by all", params={"night": NIGHT}).fetchall()


def test_batches_of_offers_hold_at_most_about_rows_per_batch_and_rank_the_same(aws_prices, ranking_config,
                                                                                 monkeypatch) -> None:
    con = aws_prices
    offers = con.sql("select count(*) from core.prices_current").fetchall()[0][0]   # the AWS sample: 932 offers
    workloads = load_workloads(WORKLOADS, ranking_config)
    specs = configured.reference().gpu_specs
    rank_offers(con, FixedThroughput(), NIGHT, AT, workloads=workloads, config=ranking_config, gpu_specs_file=specs)
    one_batch = night_rows(con)
    assert len(one_batch) == offers * 2 * 2           # every offer x 2 workloads x 2 cluster choices
    assert any(r is not None for r in con.sql("select rank_by_cost from marts.gpu_cost_ranking_history").fetchall())

    built: list[int] = []
    real_execute = rank.execute

    def recording(con_, name, params=None):  # the size of every batch's candidate table, as built
        out = real_execute(con_, name, params)
        if name == "marts/offer_candidates":
            built.append(con_.sql("select count(*) from ranking_candidates").fetchall()[0][0])
        return out

    monkeypatch.setattr(rank, "execute", recording)
    per_batch = 200
    small = ranking_config.model_copy(
        update={"compute": ranking_config.compute.model_copy(update={"rows_per_batch": per_batch})})
    rank_offers(con, FixedThroughput(), NIGHT, AT, workloads=workloads, config=small, gpu_specs_file=specs)
    parts = -(-offers // per_batch)
    # per workload: every batch of offers built for the keys, then all but the last again for the rows
    assert len(built) == len(WORKLOADS["workloads"]) * (2 * parts - 1)
    assert sum(built[:parts]) == offers                  # the batches of one workload cover every offer once
    assert max(built) <= per_batch                       # 5 batches of 165-196 offers (by a hash of the key)
    assert night_rows(con) == one_batch                  # the same rows, ranks included
