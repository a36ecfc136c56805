"""Issue 24's bars on the bundled ranking: the session's `gpucost run` (tests/cli/night.py: the bundled samples,
the shipped candidate set, the champion it registers), re-ranked on a copy of its warehouse with the ranking's
own SQL so that every cluster size the champion was asked about can be compared at the same GPU count."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import polars as pl
import pytest

from tasks import config_files
from tasks.ranking.rank import rank_offers
from tests import configured

WORKLOAD_70B = "70b-pretrain-200b"


class Recording:
    """The night's real champion, keeping every contract row it predicted and its answer."""

    def __init__(self, champion: object) -> None:
        self.champion, self.version = champion, champion.version
        self.predicted: list[pl.DataFrame] = []

    def predict(self, rows: pl.DataFrame) -> pl.DataFrame:
        out = self.champion.predict(rows)
        self.predicted.append(out)
        return out


@pytest.fixture(scope="module")
def bundled(night, tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(every contract row of tonight's ladder with its prediction, tonight's published ranking)."""
    from tasks.model.predict import load_champion
    from tasks.warehouse import connect

    assert night.returncode == 0, night.stderr[-3000:]
    home = night.copy_home(tmp_path_factory.mktemp("bars") / "home")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GPUCOST_HOME", str(home))
        env.setenv("GPUCOST_CONFIG_DIR", str(night.config))
        # mlflow.set_tracking_uri (any earlier in-process test) also sets MLFLOW_TRACKING_URI for the process
        env.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{home / 'mlflow' / 'mlflow.db'}")
        recording = Recording(load_champion(configured.resources().tracking_uri, configured.contract()))
        con = connect(home / "warehouse.duckdb")
        try:
            now = datetime.now(UTC)
            rank_offers(con, recording, now.date(), now, workloads=configured.workloads(),
                        config=config_files.ranking(), gpu_specs_file=configured.reference().gpu_specs)
        finally:
            con.close()
    with duckdb.connect(str(night.home / "published.duckdb"), read_only=True) as db:
        published = db.sql("select * from gpu_cost_ranking").pl()
    return pl.concat(recording.predicted, how="diagonal_relaxed"), published


def per_gpu(predicted: pl.DataFrame, domain: int, gbps: float) -> dict[int, float]:
    """70B on H100-SXM on one machine (its scale-up domain and network per GPU): tokens/s/GPU by cluster size."""
    rows = predicted.filter(pl.col("run_id").str.starts_with(WORKLOAD_70B + "|H100-SXM|"),
                            pl.col("scale_out_gbps_per_gpu") == gbps, pl.col("scale_up_domain_gpus") == domain)
    return dict(zip(rows["num_gpus"].to_list(), rows["predicted_tokens_per_sec_per_gpu"].to_list(), strict=True))


def test_70b_on_1_gpu_vms_is_below_0_6x_of_8_gpu_nvlink_machines_at_the_same_gpu_count(bundled):
    predicted, _ = bundled
    # a3-highgpu-1g: 1 H100, 25 Gbps (data/reference/instance_machines.csv); a3-highgpu-8g: 8 on NVSwitch,
    # 4 x 200 Gbps GPU NICs = 100 Gb/s per GPU; p5.48xlarge: 8 on NVSwitch, 3,200 Gbps EFA = 400 Gb/s per GPU
    one_gpu_vms = per_gpu(predicted, 1, 25.0)
    for domain_8 in (per_gpu(predicted, 8, 100.0), per_gpu(predicted, 8, 400.0)):
        shared = sorted(set(one_gpu_vms) & set(domain_8))
        assert shared and max(shared) == 64  # 64 = max_gpus: both ladders reach it
        for gpus in shared:
            assert one_gpu_vms[gpus] < 0.6 * domain_8[gpus], (gpus, one_gpu_vms[gpus], domain_8[gpus])


def test_70b_fastest_choice_uses_at_least_48_of_its_64_gpus(bundled):
    _, published = bundled
    first = published.filter(pl.col("workload") == WORKLOAD_70B, pl.col("rank_by_time") == 1)
    assert first.height >= 1 and (first["cluster_choice"] == "fastest").all()
    assert first["gpus"].min() >= 48 and first["max_gpus"].max() == 64


def test_the_moe_and_fp8_workloads_are_ranked(bundled):
    _, published = bundled
    for workload in ("30b-a3b-moe-pretrain-500b", "8b-fp8-pretrain-1t"):
        ranked = published.filter(pl.col("workload") == workload, pl.col("rank_by_cost").is_not_null())
        assert ranked.height > 0, workload
        assert ranked["predicted_tokens_per_sec_per_gpu"].min() > 0


def test_every_bundled_offer_has_a_machine_and_says_where_it_came_from(bundled):
    _, published = bundled
    assert published["scale_up_domain_gpus"].null_count() == 0
    assert published["scale_out_gbps_per_gpu"].null_count() == 0 and published["machine_source"].null_count() == 0
    listed = published.filter(pl.col("machine_source").str.starts_with("data/reference/instance_machines.csv"))
    assert listed.select("provider", "instance_type").unique().height >= 60
