"""Commitments and checkpoint storage in the ranking, against hand arithmetic.

The offers are Azure's Standard_ND96isr_H100_v5 (8 x H100) in westus, with the figures of the bundled
Retail Prices list (data/samples/prices/azure_retail_prices_gpu_westus.json): Linux pay-as-you-go
127.816 USD/h, Linux Spot 23.620397 USD/h, and the reservation items' term prices 716,588 USD (1 Year),
1,474,603 USD (3 Years), 2,239,336 USD (5 Years). They are written into core.price_observations here so
that the ranking's arithmetic is tested apart from the adapter (tests/prices/test_commitment_prices.py
checks that ingesting that file gives the same rows)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from tasks.ranking.config import Ranking
from tasks.ranking.rank import rank_offers
from tasks.ranking.workloads import WorkloadConfigError, load_workloads
from tests import configured
from tests.ranking.conftest import FixedThroughput, pinned_ranking_tables

NIGHT = date(2026, 9, 2)
AT = datetime(2026, 9, 2, 2, 0, tzinfo=UTC)
SOURCE = "azure_retail_prices_gpu_westus.json"

# (pricing, usd_per_hour, term_hours, upfront_usd): the reservations' term price is all "upfront"
# (purchase_option term_total), its effective hourly price = term price / term hours.
OFFERS = [
    ("on_demand", 127.816, None, None),
    ("spot", 23.620397, None, None),
    ("reserved_1y", 716588 / 8760, 8760.0, 716588.0),
    ("reserved_3y", 1474603 / 26280, 26280.0, 1474603.0),
    ("reserved_5y", 2239336 / 43800, 43800.0, 2239336.0),
]


def add_offers(con) -> None:
    for line, (pricing, usd_per_hour, term_hours, upfront_usd) in enumerate(OFFERS, start=1):
        con.execute(
            "insert into core.price_observations (provider, region, instance_type, gpu, gpu_name, gpu_count,"
            " pricing, usd_per_hour, usd_per_gpu_hour, currency, observed_at, source_file, source_line,"
            " content_sha256, ingested_at, term_hours, upfront_usd, recurring_usd_per_hour, purchase_option)"
            " values ('azure', 'westus', 'Standard_ND96isr_H100_v5', 'H100-SXM', 'H100', 8, $pricing, $usd,"
            " $usd / 8, 'USD', $at, $source, $line, 'sha', $at, $term, $upfront,"
            " case when $term is null then null else 0.0 end,"
            " case when $term is null then null else 'term_total' end)",
            {"pricing": pricing, "usd": usd_per_hour, "at": AT, "source": SOURCE, "line": line,
             "term": term_hours, "upfront": upfront_usd},
        )


def workload(token_budget: float, checkpoints_kept: int = 0) -> dict:
    # Llama-2-70B shape, bf16 AdamW: state 68.98e9 x 16 B = 1,103.68 GB; activations 4096 x 8192 x (2 x 80 + 34)
    # = 6.51 GB per GPU; usable 80 x 0.9 = 72 GB -> 1103.68 / (72 - 6.51) = 16.9 -> 17 GPUs -> 3 instances.
    # Ladder 3, 4, 8 instances (max 64 GPUs); at 1000 tokens/s/GPU only 8 instances (64 GPUs) meet 1,500 h.
    return {
        "name": "70b-run", "workload": "pretrain", "params_b": 68.98, "n_layers": 80, "d_model": 8192,
        "seq_len": 4096, "precision": "bf16", "optimizer": "adamw", "token_budget": token_budget,
        "max_gpus": 64, "deadline_hours": 1500, "checkpoints_kept": checkpoints_kept,
    }


# 1,400 h on 64 GPUs at 1000 tokens/s/GPU: 1000 x 64 x 3600 x 1400 = 322.56e9 tokens.
RUN_1400H = 1000 * 64 * 3600 * 1400


@pytest.fixture
def config() -> dict:
    """config/ranking.toml's tables, pinned; each test changes them and passes them typed (Ranking)."""
    config = pinned_ranking_tables()
    config["spot"]["interruption_rate_per_hour"]["azure"] = 0.02
    config["commitments"] = {"resale_fraction": 0.0}
    config["checkpoints"] = {"price_list_storage_type": {}, "usd_per_gb_month": {"default": 0.0}}
    return config


def rank(con, config, token_budget: float, checkpoints_kept: int = 0) -> dict[str, dict]:
    typed = Ranking.model_validate(config)
    workloads = load_workloads({"workloads": [workload(token_budget, checkpoints_kept)]}, typed)
    rank_offers(con, FixedThroughput(), NIGHT, AT, workloads=workloads, config=typed,
                gpu_specs_file=configured.reference().gpu_specs)
    rel = con.sql(
        "select * from marts.gpu_cost_ranking_history where publish_date = $night and workload = '70b-run'"
        " and cluster_choice = 'cheapest'",
        params={"night": NIGHT},
    )
    found = [dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()]
    return {row["pricing"]: row for row in found}


def test_1400_hour_run_on_8_instances_by_hand(con, config):
    add_offers(con)
    rows = rank(con, config, RUN_1400H)
    for row in rows.values():
        assert row["instances"] == 8 and row["gpus"] == 64 and row["hours_to_finish"] == pytest.approx(1400)
        assert row["not_ranked_reason"] is None

    # On demand: 8 x 127.816 x 1,400 = 1,431,539.20 USD.
    on_demand = rows["on_demand"]
    assert on_demand["expected_total_usd"] == pytest.approx(1_431_539.20)
    assert on_demand["term_hours"] is None and on_demand["break_even_hours"] is None
    assert on_demand["commitment_note"] is None

    # Spot: 8 instances x 0.02 preemptions/h x 1,400 h = 224 preemptions x (30/2/60 + 10/60 = 0.416667 h)
    # = 93.33 h lost -> 1,493.33 h x 8 x 23.620397 = 282,185.01 USD.
    spot = rows["spot"]
    assert spot["expected_hours"] == pytest.approx(1493.3333, rel=1e-6)
    assert spot["expected_total_usd"] == pytest.approx(282_185.01, rel=1e-7)

    # 1-year reservation: 716,588 / 8,760 = 81.802283 USD/h effective; the whole term is paid for each of the
    # 8 instances: 8 x 716,588 = 5,732,704 USD, although the run uses 1,400 of its 8,760 hours.
    # Break-even against on demand: 716,588 / 127.816 = 5,606.40 h of use per instance.
    one_year = rows["reserved_1y"]
    assert one_year["usd_per_hour"] == pytest.approx(81.802283, rel=1e-7)
    assert one_year["term_hours"] == 8760 and one_year["billed_term_hours"] == 8760
    assert one_year["expected_hours"] == pytest.approx(1400)  # a commitment is never preempted
    assert one_year["expected_total_usd"] == pytest.approx(5_732_704.0)
    assert one_year["compute_usd"] == pytest.approx(5_732_704.0)
    assert one_year["on_demand_usd_per_hour"] == pytest.approx(127.816)
    assert one_year["break_even_hours"] == pytest.approx(5606.40, abs=0.01)
    # 5,732,704 - 1,431,539.20 = 4,301,164.80 USD more than on demand
    assert one_year["commitment_note"] == (
        "run too short for the commitment to pay: 1400 h of use per instance, break-even 5606 h; "
        "on demand costs 4301165 USD less"
    )
    # 3 years: 8 x 1,474,603 = 11,796,824 USD; break-even 1,474,603 / 127.816 = 11,536.92 h.
    # 5 years: 8 x 2,239,336 = 17,914,688 USD; break-even 2,239,336 / 127.816 = 17,520.00 h.
    assert rows["reserved_3y"]["expected_total_usd"] == pytest.approx(11_796_824.0)
    assert rows["reserved_3y"]["break_even_hours"] == pytest.approx(11_536.92, abs=0.01)
    assert rows["reserved_5y"]["expected_total_usd"] == pytest.approx(17_914_688.0)
    assert rows["reserved_5y"]["break_even_hours"] == pytest.approx(17_520.00, abs=0.01)

    # Ranked side by side for the same 8 instances: spot, on demand, then the terms by length.
    order = sorted(rows, key=lambda p: rows[p]["rank_by_cost"])
    assert order == ["spot", "on_demand", "reserved_1y", "reserved_3y", "reserved_5y"]
    # USD per million tokens: 5,732,704 / 322,560 Mtokens = 17.7725 USD/Mtoken
    assert one_year["usd_per_mtoken"] == pytest.approx(5_732_704 / 322_560)


def test_1400_hour_run_from_the_ingested_azure_list(con, config):
    # The same run, with the prices as the ingest makes them from the bundled Retail Prices list (items 451,
    # 452, 530: pay-as-you-go 127.816, the 1-year reservation's term price 716,588, Spot 23.620397 USD/h): the
    # figures of test_1400_hour_run_on_8_instances_by_hand above, so adapter and ranking agree end to end.
    from tasks.prices.ingest import PriceSource, ingest_price_file
    from tests.conftest import PRICE_SAMPLES

    ingest_price_file(con, PriceSource(PRICE_SAMPLES / SOURCE, "azure", "azure-retail"), configured.aliases(), AT,
                      **configured.price_options())
    spec = workload(RUN_1400H) | {"regions": ["westus"]}
    workloads = load_workloads({"workloads": [spec]}, Ranking.model_validate(config))
    rank_offers(con, FixedThroughput(), NIGHT, AT, workloads=workloads, config=Ranking.model_validate(config),
                gpu_specs_file=configured.reference().gpu_specs)
    rel = con.sql(
        "select pricing, instances, purchase_option, expected_total_usd, break_even_hours, rank_by_cost"
        " from marts.gpu_cost_ranking_history where instance_type = 'Standard_ND96isr_H100_v5'"
        " and cluster_choice = 'cheapest'"
    )
    rows = {r[0]: r[1:] for r in rel.fetchall()}
    assert set(rows) == {"on_demand", "spot", "reserved_1y", "reserved_3y", "reserved_5y"}
    assert {r[0] for r in rows.values()} == {8}
    assert rows["on_demand"][2] == pytest.approx(1_431_539.20)        # 8 x 127.816 x 1,400
    assert rows["spot"][2] == pytest.approx(282_185.01, rel=1e-7)     # 8 x 23.620397 x 1,493.33
    assert rows["reserved_1y"][1:3] == ("term_total", pytest.approx(5_732_704.0))  # 8 x 716,588
    assert rows["reserved_1y"][3] == pytest.approx(5606.40, abs=0.01)  # 716,588 / 127.816
    assert rows["spot"][4] < rows["on_demand"][4] < rows["reserved_1y"][4] < rows["reserved_3y"][4]


def test_resale_fraction_and_break_even(con, config):
    # Half of the unused term recovered: 8 x 81.802283 x (8,760 - 0.5 x (8,760 - 1,400)) = 8 x 81.802283 x 5,080
    # = 3,324,444.79 USD. Break-even: c T (1 - r) / (o - r c) = 716,588 x 0.5 / (127.816 - 40.901142) = 4,122.36 h.
    add_offers(con)
    config["commitments"]["resale_fraction"] = 0.5
    one_year = rank(con, config, RUN_1400H)["reserved_1y"]
    assert one_year["resale_fraction"] == 0.5
    assert one_year["expected_total_usd"] == pytest.approx(3_324_444.79, rel=1e-8)
    assert one_year["break_even_hours"] == pytest.approx(4122.36, abs=0.01)


def test_a_long_run_makes_the_reservation_pay(con, config):
    # 7,000 h on the same 8 instances (deadline lifted): on demand 8 x 127.816 x 7,000 = 7,157,696 USD; the
    # 1-year term still costs 5,732,704 USD -> it pays, saving 1,424,992 USD; it now ranks above on demand.
    add_offers(con)
    spec = workload(1000 * 64 * 3600 * 7000)
    spec.update(deadline_hours=7000)
    workloads = load_workloads({"workloads": [spec]}, Ranking.model_validate(config))
    rank_offers(con, FixedThroughput(), NIGHT, AT, workloads=workloads, config=Ranking.model_validate(config),
                gpu_specs_file=configured.reference().gpu_specs)
    rel = con.sql(
        "select pricing, expected_total_usd, rank_by_cost, commitment_note from marts.gpu_cost_ranking_history"
        " where cluster_choice = 'cheapest'"
    )
    rows = {r[0]: r[1:] for r in rel.fetchall()}
    assert rows["on_demand"][0] == pytest.approx(7_157_696.0)
    assert rows["reserved_1y"][0] == pytest.approx(5_732_704.0)
    assert rows["reserved_1y"][1] < rows["on_demand"][1]
    assert rows["reserved_1y"][2] == (
        "pays: 7000 h of use per instance, break-even 5606 h; saves 1424992 USD against on demand"
    )


def test_checkpoint_storage_is_its_own_column_and_in_the_cost(con, config):
    # 3 checkpoints of 68.98e9 params x (2 weight + 4 master + 8 Adam state) B = 965.72 GB each, at a configured
    # 0.05 USD/GB-month, held 1,400 h = 1,400 / 730 months: 3 x 965.72 x 0.05 x 1400 / 730 = 277.81 USD.
    add_offers(con)
    config["checkpoints"]["usd_per_gb_month"]["azure"] = 0.05
    rows = rank(con, config, RUN_1400H, checkpoints_kept=3)
    on_demand = rows["on_demand"]
    assert on_demand["checkpoints_kept"] == 3
    assert on_demand["checkpoint_gb"] == pytest.approx(965.72)
    assert on_demand["storage_usd_per_gb_month"] == pytest.approx(0.05)
    assert on_demand["storage_price_source"] == "config/ranking.toml [checkpoints]"
    assert on_demand["checkpoint_storage_usd"] == pytest.approx(277.8099, rel=1e-6)
    assert on_demand["expected_total_usd"] == pytest.approx(1_431_539.20 + 277.8099, rel=1e-9)
    assert on_demand["usd_per_mtoken"] == pytest.approx((1_431_539.20 + 277.8099) / 322_560, rel=1e-9)
    # spot holds them for its expected 1,493.33 h: 3 x 965.72 x 0.05 x 1493.333 / 730 = 296.33 USD
    assert rows["spot"]["checkpoint_storage_usd"] == pytest.approx(296.3305, rel=1e-6)


def test_no_checkpoints_or_no_price_costs_nothing(con, config):
    add_offers(con)
    rows = rank(con, config, RUN_1400H, checkpoints_kept=3)  # kept, but no price configured: 0 USD
    assert rows["on_demand"]["checkpoint_storage_usd"] == 0
    assert rows["on_demand"]["expected_total_usd"] == pytest.approx(1_431_539.20)
    config["checkpoints"]["usd_per_gb_month"]["azure"] = 0.05
    rows = rank(con, config, RUN_1400H)  # priced, but the workload keeps none
    assert rows["on_demand"]["checkpoint_storage_usd"] == 0


def test_qlora_checkpoints_hold_the_adapters_only(con, config):
    # 8.03e9 params x 1% adapters x 14 B = 1.1242 GB per checkpoint (the frozen 4-bit base is not saved again).
    [(gb,)] = con.execute(
        "select marts.checkpoint_bytes('qlora', 8.03, 2.0, 4.0, 8.0, 0.01) / 1e9"
    ).fetchall()
    assert gb == pytest.approx(1.1242)


def test_checkpoints_kept_must_be_a_whole_number(config):
    spec = workload(RUN_1400H)
    spec["checkpoints_kept"] = -1
    with pytest.raises(WorkloadConfigError, match="checkpoints_kept"):
        load_workloads({"workloads": [spec]}, Ranking.model_validate(config))


def test_checkpoint_storage_priced_from_the_aws_offer_file(con, config, tmp_path):
    # The AWS offer JSON sample carries EBS gp3 at 0.08 USD/GB-month in us-east-2 (US East (Ohio)); config names
    # gp3 as AWS's checkpoint storage and prices nothing itself. tiny-sft (1B params, as in test_cost_model.py)
    # on g6.xlarge use2-az1: 10 h on 1 L4 at 1000 tokens/s/GPU. 2 checkpoints of 1e9 x (2 + 4 + 8) B = 14 GB:
    # 2 x 14 x 0.08 x 10 / 730 = 0.0306849 USD; on-demand 0.8048 x 10 = 8.048 USD.
    from tasks.prices.ingest import PriceSource, ingest_price_file
    from tests.conftest import PRICE_SAMPLES

    # A slice of the SkyPilot AWS sample: its header and g6.xlarge in use1-az1 (line 121) and use2-az1 (line 125).
    lines = (PRICE_SAMPLES / "skypilot_v8_aws_gpu_subset.csv").read_text().splitlines()
    skypilot = tmp_path / "skypilot_aws_g6.csv"
    skypilot.write_text("\n".join([lines[0], lines[120], lines[124]]) + "\n")
    offer = PRICE_SAMPLES / "aws_pricelist_ec2_offer_json_excerpt_opencost.json"
    for path, fmt in ((skypilot, "skypilot"), (offer, "aws-offer")):
        ingest_price_file(con, PriceSource(path, "aws", fmt), configured.aliases(), AT, **configured.price_options())
    config["checkpoints"]["price_list_storage_type"] = {"aws": "gp3"}
    tiny = {"name": "tiny-sft", "workload": "sft", "params_b": 1.0, "n_layers": 16, "d_model": 2048,
            "seq_len": 2048, "precision": "bf16", "optimizer": "adamw", "token_budget": 36_000_000,
            "checkpoints_kept": 2, "max_gpus": 1}  # 1 GPU: storage by the hour favours the biggest cluster
    workloads = load_workloads({"workloads": [tiny]}, Ranking.model_validate(config))
    rank_offers(con, FixedThroughput(), NIGHT, AT, workloads=workloads, config=Ranking.model_validate(config),
                gpu_specs_file=configured.reference().gpu_specs)
    rel = con.sql(
        "select zone, checkpoint_gb, storage_usd_per_gb_month, storage_price_source, checkpoint_storage_usd,"
        " expected_total_usd from marts.gpu_cost_ranking_history where instance_type = 'g6.xlarge'"
        " and pricing = 'on_demand' and zone in ('use2-az1', 'use1-az1') and cluster_choice = 'cheapest' order by zone"
    )
    east1, east2 = rel.fetchall()
    assert east2[:4] == ("use2-az1", pytest.approx(14.0), 0.08, f"price list: {offer}")
    assert east2[4] == pytest.approx(0.0306849, rel=1e-5)
    assert east2[5] == pytest.approx(8.048 + 0.0306849, rel=1e-7)
    # us-east-1: no price-list storage price there and none configured -> 0 USD
    assert east1[2:5] == (0.0, "config/ranking.toml [checkpoints]", 0.0)
