"""The cost model, figure by figure, against hand arithmetic on real AWS SkyPilot sample prices."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from tasks.ranking.rank import NO_CHAMPION_REASON, rank_offers
from tasks.ranking.workloads import WorkloadConfigError, load_workloads
from tests import configured
from tests.ranking.conftest import FixedThroughput

NIGHT = date(2026, 1, 6)
AT = datetime(2026, 1, 6, 2, 0, tzinfo=UTC)


def rows(con, where: str = "true", params: dict | None = None, cluster_choice: str = "cheapest") -> list[dict]:
    """Rows of the night; by default each offer's cheapest cluster (the rows rank_by_cost ranks)."""
    rel = con.sql(
        "select * from marts.gpu_cost_ranking_history where publish_date = $night and cluster_choice = $choice and "  # noqa: S608
        + where,
        params={"night": NIGHT, "choice": cluster_choice, **(params or {})},
    )
    return [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]


def one(con, instance_type: str, zone: str, pricing: str, workload: str) -> dict:
    found = rows(
        con,
        "instance_type = $it and zone = $zone and pricing = $pricing and workload = $workload",
        {"it": instance_type, "zone": zone, "pricing": pricing, "workload": workload},
    )
    assert len(found) == 1
    return found[0]


SMALL = {
    "workloads": [
        {"name": "tiny-sft", "workload": "sft", "params_b": 1.0, "n_layers": 16, "d_model": 2048,
         "seq_len": 2048, "precision": "bf16", "optimizer": "adamw", "token_budget": 36_000_000}
    ]
}


def test_on_demand_row_by_hand(aws_prices, ranking_config):
    # g6.xlarge (1 x L4), us-east-1 / use1-az1, on-demand 0.8048 USD/h (sample line 121).
    champion = FixedThroughput(tokens=1000.0, low=800.0, high=1250.0)
    workloads = load_workloads(SMALL, ranking_config)
    rank_offers(aws_prices, champion, NIGHT, AT, workloads=workloads, config=ranking_config,
                gpu_specs_file=configured.reference().gpu_specs)
    row = one(aws_prices, "g6.xlarge", "use1-az1", "on_demand", "tiny-sft")
    assert row["source_line"] == 121 and row["usd_per_hour"] == pytest.approx(0.8048)
    # 1B params x 16 B = 16 GB state; activations 2048 x 1 x 2048 x (2*16 + 34) = 276,824,064 B;
    # usable 24e9 x 0.9 = 21.6e9; 16e9 / (21.6e9 - 0.276824064e9) = 0.75 -> 1 GPU, 1 instance.
    assert row["min_gpus_for_memory"] == 1 and row["instances"] == 1 and row["gpus"] == 1
    assert row["memory_per_gpu_gb"] == pytest.approx(16.276824064)
    # 36e6 tokens / (1000 tok/s x 1 GPU x 3600) = 10 h; 1 x 0.8048 x 10 = 8.048 USD
    assert row["hours_to_finish"] == pytest.approx(10.0)
    assert row["compute_usd"] == pytest.approx(8.048)
    # on-demand: never interrupted
    assert row["interruption_rate_per_hour"] == 0 and row["expected_hours"] == pytest.approx(10.0)
    # L4 72 W x 0.9 x 10 h x PUE 1.2 / 1000 = 0.7776 kWh, reported only (cloud): 0 USD added
    assert row["energy_kwh"] == pytest.approx(0.7776)
    assert row["energy_usd"] == 0
    assert row["expected_total_usd"] == pytest.approx(8.048)
    # 8.048 USD / 36 Mtokens = 0.22355... USD/Mtoken; at 1250 tok/s: 8 h -> 6.4384/36; at 800: 12.5 h -> 10.06/36
    assert row["usd_per_mtoken"] == pytest.approx(8.048 / 36)
    assert row["usd_per_mtoken_low"] == pytest.approx(0.8048 * 8 / 36)
    assert row["usd_per_mtoken_high"] == pytest.approx(0.8048 * 12.5 / 36)
    assert row["model_version"] == "7" and row["not_ranked_reason"] is None and row["rank_by_cost"] >= 1


def test_spot_expected_cost_by_hand(aws_prices, ranking_config):
    # Same offer, spot 0.4011 USD/h. AWS rate 0.02 preemptions per instance-hour; lost per preemption
    # 30/2/60 + 10/60 = 0.25 + 0.16667 = 0.416667 h. 10 h x 1 instance x 0.02 = 0.2 preemptions
    # -> expected 10 + 0.2 x 0.416667 = 10.083333 h -> 0.4011 x 10.083333 = 4.044425 USD.
    workloads = load_workloads(SMALL, ranking_config)
    rank_offers(aws_prices, FixedThroughput(), NIGHT, AT, workloads=workloads, config=ranking_config,
                gpu_specs_file=configured.reference().gpu_specs)
    row = one(aws_prices, "g6.xlarge", "use1-az1", "spot", "tiny-sft")
    assert row["interruption_rate_per_hour"] == pytest.approx(0.02)
    assert row["expected_interruptions"] == pytest.approx(0.2)
    assert row["lost_hours_per_interruption"] == pytest.approx(0.416667, rel=1e-5)
    assert row["expected_hours"] == pytest.approx(10.083333, rel=1e-6)
    assert row["expected_total_usd"] == pytest.approx(4.044425, rel=1e-6)
    # energy follows the expected hours: 72 x 0.9 x 10.083333 x 1.2 / 1000 = 0.78408 kWh
    assert row["energy_kwh"] == pytest.approx(0.78408, rel=1e-5)
    # one observation of this spot offer: median = p95 = the price itself
    assert row["spot_usd_per_hour_median"] == pytest.approx(0.4011)
    assert row["spot_usd_per_hour_p95"] == pytest.approx(0.4011)
    assert row["spot_history_observations"] == 1


def test_every_row_recomputes_from_its_own_columns(aws_prices, ranking_config):
    rank_offers(aws_prices, FixedThroughput(), NIGHT, AT, config=ranking_config,
                workloads=configured.workloads(ranking_config), gpu_specs_file=configured.reference().gpu_specs)
    ranked = rows(aws_prices, "not_ranked_reason is null")
    assert ranked
    for r in ranked:
        hours = r["token_budget"] / (r["predicted_tokens_per_sec_per_gpu"] * r["gpus"] * 3600)
        expected = hours + r["instances"] * r["interruption_rate_per_hour"] * hours * r["lost_hours_per_interruption"]
        kwh = r["gpus"] * r["tdp_w"] * r["utilisation_of_tdp"] * expected * r["pue"] / 1000
        assert r["hours_to_finish"] == pytest.approx(hours)
        assert r["expected_hours"] == pytest.approx(expected)
        assert r["energy_kwh"] == pytest.approx(kwh)
        assert r["expected_total_usd"] == pytest.approx(r["instances"] * r["usd_per_hour"] * expected + r["energy_usd"])
        assert r["usd_per_mtoken"] == pytest.approx(r["expected_total_usd"] / (r["token_budget"] / 1e6))


def test_owned_energy_is_added_to_cost(aws_prices, ranking_config):
    # An owned 8 x A100-80GB box (fault-free synthetic row in the owned shape): 10 USD/h amortised,
    # 0.15 USD/kWh, PUE 1.5. tiny-sft: 36e6 / (1000 x 8 x 3600) = 1.25 h; 8 x 400 W x 0.9 x 1.25 x 1.5 / 1000
    # = 5.4 kWh -> 0.81 USD; total 10 x 1.25 + 0.81 = 13.31 USD.
    aws_prices.execute(
        "insert into core.price_observations (provider, region, instance_type, gpu, gpu_count, pricing, usd_per_hour,"
        " usd_per_gpu_hour, currency, observed_at, source_file, source_line, content_sha256, ingested_at,"
        " electricity_usd_per_kwh, pue) values ('owned', 'basement', 'dgx-a100', 'A100-80GB', 8, 'on_demand', 10.0,"
        " 1.25, 'USD', now(), 'owned.csv', 2, 'x', now(), 0.15, 1.5)"
    )
    workloads = load_workloads(SMALL, ranking_config)
    rank_offers(aws_prices, FixedThroughput(), NIGHT, AT, workloads=workloads, config=ranking_config,
                gpu_specs_file=configured.reference().gpu_specs)
    [row] = rows(aws_prices, "provider = 'owned'")
    assert row["hours_to_finish"] == pytest.approx(1.25)
    assert row["energy_kwh"] == pytest.approx(5.4)
    assert row["energy_usd"] == pytest.approx(0.81)
    assert row["expected_total_usd"] == pytest.approx(13.31)


def test_qlora_8b_ranks_24gb_cards_and_70b_pretrain_does_not_fit_them(aws_prices, ranking_config):
    rank_offers(aws_prices, FixedThroughput(), NIGHT, AT, config=ranking_config,
                workloads=configured.workloads(ranking_config), gpu_specs_file=configured.reference().gpu_specs)
    # 8B QLoRA: 8.03e9 x (0.5 + 0.01 x (2+2+4+8)) = 5.2998e9 B; activations 2048 x 4096 x (2*32+34)
    # = 822,083,584 B; total 6.1219 GB on one GPU <= 21.6 GB usable of an L4 / A10G.
    qlora = one(aws_prices, "g6.xlarge", "use1-az1", "on_demand", "8b-qlora-100m")
    assert qlora["fits_in_memory"] and qlora["gpus"] == 1 and qlora["rank_by_cost"] is not None
    assert qlora["memory_per_gpu_gb"] == pytest.approx(5.2998 + 0.822083584)
    ranked_24gb = rows(aws_prices, "workload = '8b-qlora-100m' and gpu_memory_gb = 24 and gpus_per_instance >= 1")
    assert ranked_24gb and all(r["rank_by_cost"] is not None for r in ranked_24gb)
    pretrain_24gb = rows(aws_prices, "workload = '70b-pretrain-200b' and gpu_memory_gb = 24 and gpus_per_instance >= 1")
    assert pretrain_24gb and not any(r["fits_in_memory"] for r in pretrain_24gb)
    # 70B pretrain: 68.98e9 x 16 B = 1103.68e9 B; activations 4096 x 8192 x (2*80+34) = 6,509,559,808 B;
    # 1103.68e9 / (21.6e9 - 6.5096e9) = 73.14 -> 74 GPUs > max_gpus 64.
    big = one(aws_prices, "g6.xlarge", "use1-az1", "on_demand", "70b-pretrain-200b")
    assert big["fits_in_memory"] is False and big["rank_by_cost"] is None
    assert big["min_gpus_for_memory"] == 74
    assert big["not_ranked_reason"].startswith("does not fit: needs 74 GPUs")
    # An 80 GB card: 1103.68e9 / (72e9 - 6.5096e9) = 16.85 -> 17 GPUs -> at least 3 x 8-GPU p5 instances (24
    # GPUs). At a fixed 1000 tokens/s/GPU every size costs the same GPU-hours on demand (storage is free in this
    # config): a tie to the cent, which the fewest instances win; spot adds preemptions per instance: 3 again.
    h100 = rows(aws_prices, "workload = '70b-pretrain-200b' and instance_type = 'p5.48xlarge'")
    assert h100 and all(r["min_gpus_for_memory"] == 17 and r["instances"] == 3 for r in h100)
    # the fastest choice: the most whole instances within max_gpus 64 -> 8 x 8
    fastest = rows(aws_prices, "workload = '70b-pretrain-200b' and instance_type = 'p5.48xlarge'",
                   cluster_choice="fastest")
    assert fastest and all(r["instances"] == 8 and r["gpus"] == 64 for r in fastest)


def test_deadline_grows_the_cluster_or_gives_the_reason(aws_prices, ranking_config):
    # 36e6 tokens at 1000 tok/s/GPU: 1 GPU = 10 h, 2 = 5 h, 4 = 2.5 h. Deadline 3 h -> 4 x g6.xlarge;
    # with max_gpus 2 the best is 5 h: not ranked, with the reason.
    fast = {"workloads": [dict(SMALL["workloads"][0], deadline_hours=3.0, max_gpus=4)]}
    rank_offers(aws_prices, FixedThroughput(), NIGHT, AT, workloads=load_workloads(fast, ranking_config),
                config=ranking_config, gpu_specs_file=configured.reference().gpu_specs)
    row = one(aws_prices, "g6.xlarge", "use1-az1", "on_demand", "tiny-sft")
    assert row["instances"] == 4 and row["hours_to_finish"] == pytest.approx(2.5)
    capped = {"workloads": [dict(SMALL["workloads"][0], deadline_hours=3.0, max_gpus=2)]}
    rank_offers(aws_prices, FixedThroughput(), NIGHT, AT, workloads=load_workloads(capped, ranking_config),
                config=ranking_config, gpu_specs_file=configured.reference().gpu_specs)
    row = one(aws_prices, "g6.xlarge", "use1-az1", "on_demand", "tiny-sft")
    assert row["rank_by_cost"] is None
    assert row["not_ranked_reason"] == "cannot finish within 3.0 h with at most 2 GPUs: fastest is 5 h on 2 GPUs"


def test_partitioned_and_unknown_gpus_are_kept_with_a_reason(aws_prices, ranking_config):
    aws_prices.execute("delete from core.gpu_specs where gpu = 'T4'")
    rank_offers(aws_prices, FixedThroughput(), NIGHT, AT, config=ranking_config,
                workloads=configured.workloads(ranking_config), gpu_specs_file=configured.reference().gpu_specs)
    t4 = rows(aws_prices, "gpu = 'T4'")
    assert t4 and all(r["not_ranked_reason"].startswith("no row for GPU T4 in gpu_specs") for r in t4)
    sliced = rows(aws_prices, "gpus_per_instance < 1")
    assert sliced and all(r["not_ranked_reason"].startswith("partitioned GPU") for r in sliced)


def test_without_a_champion_every_row_says_why(aws_prices, ranking_config):
    result = rank_offers(aws_prices, None, NIGHT, AT, config=ranking_config,
                         workloads=configured.workloads(ranking_config),
                         gpu_specs_file=configured.reference().gpu_specs)
    assert result.ranked == 0 and result.rows > 0
    reasons = {r["not_ranked_reason"] for r in rows(aws_prices)}
    assert NO_CHAMPION_REASON in reasons


def test_ranks_are_per_workload_by_cost_and_by_time(aws_prices, ranking_config):
    rank_offers(aws_prices, FixedThroughput(), NIGHT, AT, config=ranking_config,
                workloads=configured.workloads(ranking_config), gpu_specs_file=configured.reference().gpu_specs)
    for workload in ("7b-pretrain-1t", "8b-qlora-100m"):
        ranked = sorted(rows(aws_prices, "workload = $w and rank_by_cost is not null", {"w": workload}),
                        key=lambda r: r["rank_by_cost"])
        costs = [r["expected_total_usd"] for r in ranked]
        assert ranked[0]["rank_by_cost"] == 1 and costs == sorted(costs)
        by_time = sorted(rows(aws_prices, "workload = $w and rank_by_time is not null", {"w": workload},
                              cluster_choice="fastest"), key=lambda r: r["rank_by_time"])
        hours = [r["expected_hours"] for r in by_time]
        assert by_time[0]["rank_by_time"] == 1 and hours == sorted(hours)
        # each offer's fastest cluster is no slower than its cheapest
        assert min(hours) <= min(r["expected_hours"] for r in ranked)


def test_workload_config_errors_name_the_workload(ranking_config):
    bad = {"workloads": [dict(SMALL["workloads"][0], optimizer="lion")]}
    with pytest.raises(WorkloadConfigError, match="tiny-sft: optimizer lion"):
        load_workloads(bad, ranking_config)


def test_a_stale_offer_is_kept_with_a_reason_not_ranked(aws_prices, ranking_config):
    # The fixture's prices were observed on 2026-01-05. With a 180-day limit, the night of 2026-07-03
    # (179 days later) still ranks them; the night of 2026-07-05 (181 days later) ranks none of them.
    assert ranking_config.prices.max_price_age_days == 180  # config/ranking.toml
    champion = FixedThroughput()
    workloads = load_workloads(SMALL, ranking_config)
    fresh, stale = date(2026, 7, 3), date(2026, 7, 5)
    for night in (fresh, stale):
        rank_offers(aws_prices, champion, night, AT, workloads=workloads, config=ranking_config,
                    gpu_specs_file=configured.reference().gpu_specs)
    counts = dict(aws_prices.sql(
        "select publish_date, count(*) filter (where not_ranked_reason like 'stale price:%') "
        "from marts.gpu_cost_ranking_history where cluster_choice = 'cheapest' group by 1"
    ).fetchall())
    total = aws_prices.sql("select count(*) from core.prices_current").fetchall()[0][0]
    assert counts == {fresh: 0, stale: total}
    reason = aws_prices.sql(
        "select any_value(not_ranked_reason) from marts.gpu_cost_ranking_history where publish_date = $d",
        params={"d": stale},
    ).fetchall()[0][0]
    assert reason.startswith("stale price: last observed 2026-01-05 (181 days before this night")
