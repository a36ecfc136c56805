"""The ranking sizes the cluster per offer on the machine it runs on (issue 24) and prices its carbon (issue 28):
two rows per offer (cluster_choice cheapest | fastest), the machine the throughput model was shown, and the CO2
of the chosen run, each worked out by hand from the real AWS sample's prices and the shipped reference data."""

from __future__ import annotations

from datetime import UTC, date, datetime

import polars as pl
import pytest

from tasks.ranking.config import Machines
from tasks.ranking.rank import rank_offers
from tasks.ranking.workloads import load_workloads
from tests import configured

NIGHT = date(2026, 1, 6)
AT = datetime(2026, 1, 6, 2, 0, tzinfo=UTC)

# tokens/s per GPU by cluster size: scaling loses 5% per added GPU, so bigger clusters cost more GPU-hours
PER_GPU = {1: 1000.0, 2: 950.0, 3: 900.0, 4: 850.0}
TINY = {"name": "tiny-sft", "workload": "sft", "params_b": 1.0, "n_layers": 16, "d_model": 2048, "seq_len": 2048,
        "precision": "bf16", "optimizer": "adamw", "token_budget": 36_000_000, "max_gpus": 4}


class ScalingThroughput:
    """Predicts PER_GPU[num_gpus] for every run and keeps the contract rows it was asked about."""

    version = "3"

    def __init__(self) -> None:
        self.asked: list[pl.DataFrame] = []

    def predict(self, rows: pl.DataFrame) -> pl.DataFrame:
        self.asked.append(rows)
        tokens = pl.col("num_gpus").replace_strict(PER_GPU, default=500.0, return_dtype=pl.Float64)
        return rows.with_columns(predicted_tokens_per_sec_per_gpu=tokens, predicted_low=tokens * 0.8,
                                 predicted_high=tokens * 1.25)


def ranked(con, config, **workload) -> tuple[dict[tuple[str, str, str], dict], ScalingThroughput]:
    champion = ScalingThroughput()
    rank_offers(con, champion, NIGHT, AT, workloads=load_workloads({"workloads": [TINY | workload]}, config),
                config=config, gpu_specs_file=configured.reference().gpu_specs)
    rel = con.sql("select * from marts.gpu_cost_ranking_history where pricing = 'on_demand' and zone = 'use1-az1'")
    rows = [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]
    return {(r["instance_type"], r["region"], r["cluster_choice"]): r for r in rows}, champion


def test_cheapest_and_fastest_cluster_by_hand(aws_prices, ranking_config):
    # g6.xlarge (1 x L4) in us-east-1 use1-az1 at 0.8048 USD/h; 36e6 tokens; hours = 36e6 / (tok/s x n x 3600):
    #   1 GPU: 36e6 / (1000 x 1 x 3600) = 10 h      -> 1 x 0.8048 x 10       = 8.0480 USD
    #   2 GPUs: 36e6 / (950 x 2 x 3600) = 5.2632 h  -> 2 x 0.8048 x 5.2632   = 8.4716 USD
    #   3 GPUs: 36e6 / (900 x 3 x 3600) = 3.7037 h  -> 3 x 0.8048 x 3.7037   = 8.9422 USD
    #   4 GPUs: 36e6 / (850 x 4 x 3600) = 2.9412 h  -> 4 x 0.8048 x 2.9412   = 9.4682 USD
    rows, champion = ranked(aws_prices, ranking_config)
    cheapest = rows[("g6.xlarge", "us-east-1", "cheapest")]
    fastest = rows[("g6.xlarge", "us-east-1", "fastest")]
    assert (cheapest["instances"], cheapest["hours_to_finish"]) == (1, pytest.approx(10.0))
    assert cheapest["expected_total_usd"] == pytest.approx(8.048)
    assert (fastest["instances"], fastest["gpus"]) == (4, 4)
    assert fastest["hours_to_finish"] == pytest.approx(36e6 / (850 * 4 * 3600))
    assert fastest["expected_total_usd"] == pytest.approx(4 * 0.8048 * 36e6 / (850 * 4 * 3600))
    # each choice is ranked on its own axis only
    assert cheapest["rank_by_cost"] is not None and cheapest["rank_by_time"] is None
    assert fastest["rank_by_time"] is not None and fastest["rank_by_cost"] is None
    # the ladder for a 1-GPU instance with max_gpus 4: 1, 2, 3 (3 x 2^0), 4 GPUs, each seen by the model
    asked = pl.concat(champion.asked).filter(pl.col("gpu") == "L4")
    assert sorted(asked["num_gpus"].unique().to_list()) == [1, 2, 3, 4]


def test_a_deadline_moves_the_cheapest_choice_to_the_smallest_cluster_that_meets_it(aws_prices, ranking_config):
    # deadline 4 h: 1 GPU (10 h) and 2 GPUs (5.26 h) miss it; 3 GPUs (3.70 h, 8.9422 USD) is the cheapest in time
    rows, _ = ranked(aws_prices, ranking_config, deadline_hours=4.0)
    cheapest = rows[("g6.xlarge", "us-east-1", "cheapest")]
    assert cheapest["instances"] == 3 and cheapest["expected_total_usd"] == pytest.approx(8.9422, abs=1e-4)
    assert rows[("g6.xlarge", "us-east-1", "fastest")]["instances"] == 4


def test_the_model_sees_the_machine_from_the_reference_or_the_default(aws_prices, ranking_config):
    rows, champion = ranked(aws_prices, ranking_config)
    asked = pl.concat(champion.asked)
    # p5.48xlarge: 8 H100 on NVSwitch, 3,200 Gbps EFA / 8 GPUs = 400 Gb/s per GPU (data/reference/instance_machines.csv)
    p5 = rows[("p5.48xlarge", "us-east-1", "cheapest")]
    assert (p5["scale_up_domain_gpus"], p5["scale_out_gbps_per_gpu"], p5["network_kind"]) == (8, 400.0, "EFA")
    assert p5["machine_source"].startswith("data/reference/instance_machines.csv: AWS EC2 P5")
    assert p5["not_ranked_reason"].startswith("does not fit: needs 8 GPUs")  # one p5 is over max_gpus 4
    # p5.4xlarge (1 H100, 100 Gbps EFA) is: 1, 2, 3 or 4 instances, each a domain of 1 GPU on 100 Gb/s
    h100 = asked.filter(pl.col("gpu") == "H100-SXM")
    assert sorted(h100["num_gpus"].unique().to_list()) == [1, 2, 3, 4]
    assert set(h100["scale_up_domain_gpus"].to_list()) == {1} and set(h100["scale_out_gbps_per_gpu"]) == {100.0}
    # g6.xlarge: 1 L4, 10 Gbps -> domain 1, 10 Gb/s per GPU
    g6 = rows[("g6.xlarge", "us-east-1", "cheapest")]
    assert (g6["scale_up_domain_gpus"], g6["scale_out_gbps_per_gpu"]) == (1, 10.0)
    # gr6.4xlarge is not in the reference: its 1 GPU is the domain, the network the config default (10 Gb/s)
    config = ranking_config.model_copy(update={"machines": Machines(default_scale_out_gbps_per_gpu=7.5)})
    rows, champion = ranked(aws_prices, config)
    gr6 = rows[("gr6.4xlarge", "us-east-1", "cheapest")]
    assert (gr6["scale_up_domain_gpus"], gr6["scale_out_gbps_per_gpu"], gr6["network_kind"]) == (1, 7.5, "unknown")
    assert gr6["machine_source"].startswith("defaulted: not in data/reference/instance_machines.csv")
    assert 7.5 in pl.concat(champion.asked)["scale_out_gbps_per_gpu"].to_list()
    # run_id names the machine, so two machines of one GPU are two questions to the model
    assert all(run_id.count("|") == 5 for run_id in asked["run_id"].to_list())


def test_co2_of_one_offer_by_hand(aws_prices, ranking_config):
    # g6.xlarge, us-east-1, cheapest = 1 L4 for 10 h. energy_kwh = gpus x tdp_w x utilisation x hours x pue / 1000
    #   = 1 x 72 W (L4, gpu_specs.csv) x 0.9 x 10 h x 1.2 / 1000 = 0.7776 kWh
    # us-east-1 = Virginia: eGRID2023 539.599 lb/MWh x 0.45359237 = 244.76 g/kWh (data/reference/region_carbon.csv)
    # co2e_kg = 0.7776 x 244.76 / 1000 = 0.190325 kg; per million tokens: 0.190325 / 36 = 0.00528682 kg
    rows, _ = ranked(aws_prices, ranking_config)
    row = rows[("g6.xlarge", "us-east-1", "cheapest")]
    assert (row["tdp_w"], row["utilisation_of_tdp"], row["pue"]) == (72.0, 0.9, 1.2)
    assert row["energy_kwh"] == pytest.approx(0.7776)
    assert row["grid_gco2e_per_kwh"] == pytest.approx(244.76)
    assert row["co2e_kg"] == pytest.approx(0.7776 * 244.76 / 1000)
    assert row["co2e_kg_per_mtoken"] == pytest.approx(0.7776 * 244.76 / 1000 / 36)
    assert row["co2e_source"] == "EPA eGRID2023 state CO2e output rate, Virginia (via codecarbon 3.3.2) (2023)"
    # the fastest choice: 4 GPUs for 2.9412 h -> 4 x 72 x 0.9 x 2.9412 x 1.2 / 1000 = 0.91482 kWh -> 0.22391 kg
    fastest = rows[("g6.xlarge", "us-east-1", "fastest")]
    assert fastest["co2e_kg"] == pytest.approx(4 * 72 * 0.9 * (36e6 / (850 * 4 * 3600)) * 1.2 / 1000 * 244.76 / 1000)


def test_a_region_without_intensity_gets_null_and_a_reason_never_zero(aws_prices, ranking_config):
    aws_prices.execute("delete from core.region_carbon where provider = 'aws' and region = 'us-east-1'")
    rows, _ = ranked(aws_prices, ranking_config)
    row = rows[("g6.xlarge", "us-east-1", "cheapest")]
    assert row["energy_kwh"] == pytest.approx(0.7776)
    assert row["co2e_kg"] is None and row["grid_gco2e_per_kwh"] is None and row["co2e_kg_per_mtoken"] is None
    assert row["co2e_source"] == "no grid carbon intensity for aws us-east-1 (data/reference/region_carbon.csv)"
