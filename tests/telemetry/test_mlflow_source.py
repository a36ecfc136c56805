"""Telemetry from MLflow: a real SQLite tracking store into which runs are logged the way each supported
trainer logs them (its param names, step metrics with a warm-up spike and an evaluation pause, MLflow 3's
system-metric names), then ingested through the real ingest, trained on and ranked.

Every expected figure is worked out by hand from the logged values in the comments next to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pytest

from tasks import config_files
from tasks.telemetry.mlflow_source import MlflowSource
from tests import configured

T0 = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)  # ms: all runs are placed on a fixed clock
DAY = 86_400_000


def log_run(client, experiment_id: str, start_s: float, end_s: float | None, params: dict, tags: dict,
            metrics: dict[str, list[tuple[int, float, float]]], run_id: str | None = None) -> str:
    """Log a run as a trainer would: params, tags, and metric points (step, seconds after T0 + start, value).
    end_s None leaves it RUNNING. With run_id, the run is resumed (more metrics) and finished again."""
    from mlflow.entities import Metric, Param, RunTag

    if run_id is None:
        run = client.create_run(experiment_id, start_time=T0 + int(start_s * 1000))
        run_id = run.info.run_id
    else:
        client.update_run(run_id, status="RUNNING")
    points = [Metric(key, value, T0 + int((start_s + t) * 1000), step)
              for key, series in metrics.items() for step, t, value in series]
    for i in range(0, len(points), 900):
        client.log_batch(run_id, metrics=points[i:i + 900])
    client.log_batch(run_id, params=[Param(k, str(v)) for k, v in params.items()],
                     tags=[RunTag(k, str(v)) for k, v in tags.items()])
    if end_s is not None:
        client.set_terminated(run_id, "FINISHED", end_time=T0 + int(end_s * 1000))
    return run_id


def every(start: int, stop: int, step: int = 1) -> range:
    return range(start, stop + 1, step)


# --- Hugging Face Trainer run (MLflowCallback): params = TrainingArguments + model config, metric
# num_input_tokens_seen (a running count over all GPUs) every logging_steps = 5 at step = global_step.
# 8 GPUs x per_device_train_batch_size 1 x gradient_accumulation_steps 4 x seq 4096 = 131,072 tokens per step,
# 655,360 per 5 steps. Times (s after the run start) of steps 5..50: the step-10 interval is the warm-up spike
# (80 s), eval_loss is logged at 195 s (inside the step-35 interval 185..220).
HF_TIMES = {5: 20, 10: 100, 15: 120, 20: 145, 25: 165, 30: 185, 35: 220, 40: 236, 45: 256, 50: 276}
HF_PARAMS = {"per_device_train_batch_size": 1, "gradient_accumulation_steps": 4, "bf16": True, "fp16": False,
             "tf32": "None", "gradient_checkpointing": True, "optim": "adamw_torch", "learning_rate": 3e-4,
             "_name_or_path": "meta-llama/Llama-2-7b-hf", "num_hidden_layers": 32, "hidden_size": 4096,
             "max_seq_length": 4096, "logging_steps": 5}


def hf_metrics() -> dict[str, list[tuple[int, float, float]]]:
    power = {}
    for gpu, steady in ((0, 600.0), (1, 640.0)):
        # every 10 s: 300 W during the warm-up (t <= 100), 200 W during the evaluation (185 < t <= 220)
        power[f"system/gpu_{gpu}_power_usage_watts"] = [
            (i, 10 * i, 300.0 if 10 * i <= 100 else 200.0 if 185 < 10 * i <= 220 else steady) for i in every(1, 27)
        ]
    power["system/gpu_0_power_usage_percentage"] = [(i, 10 * i, 85.0) for i in every(1, 27)]  # not watts: ignored
    return {
        "num_input_tokens_seen": [(s, t, 131_072 * s) for s, t in HF_TIMES.items()],
        "loss": [(s, t, 2.0) for s, t in HF_TIMES.items()],
        "eval_loss": [(30, 195, 1.9)],
        **power,
    }


# --- Composer / llm-foundry run (SpeedMonitor throughput/device/tokens_per_sec every batch, 10 s apart), on
# two nodes (MLflow's system/<node_id>/gpu_<i>_power_usage_watts). Steps 1..10 are a warm-up spike (50,000);
# an evaluation (metrics/eval/LanguageCrossEntropy at 155 s) falls in the step-16 interval 150..160.
COMPOSER_PARAMS = {"n_gpus": 16, "n_params": 1_300_000_000, "max_seq_len": 2048, "precision": "amp_bf16",
                   "device_train_microbatch_size": 8, "global_train_batch_size": 512}
COMPOSER_STEADY = {11: 9000, 12: 9100, 13: 9200, 14: 9300, 15: 9400, 16: 9500, 17: 9600, 18: 9700, 19: 9800,
                   20: 9900}


def composer_metrics(steps: dict[int, float], power_until_s: int) -> dict[str, list[tuple[int, float, float]]]:
    return {
        "throughput/device/tokens_per_sec": [(s, 10 * s, v) for s, v in steps.items()],
        "metrics/eval/LanguageCrossEntropy": [(15, 155, 2.5)],
        # samples at 5, 15, 25, ... s: 100 W in the warm-up (t <= 100), 250 W at 155 s (in the evaluation interval)
        **{f"system/node_{node}/gpu_0_power_usage_watts": [
            (i, 10 * i + 5, 100.0 if 10 * i + 5 <= 100 else 250.0 if 10 * i + 5 == 155 else watts)
            for i in range(0, power_until_s // 10)] for node, watts in ((0, 300.0), (1, 320.0))},
    }


@dataclass
class Scenario:
    uri: str
    warehouse: Path
    runs: dict[str, str]
    first: list
    second: list
    third: list


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """Log the runs, ingest (1st), log a new run and ingest (2nd), resume a run and ingest (3rd)."""
    from mlflow.tracking import MlflowClient

    from tasks.telemetry.mlflow_ingest import ingest_mlflow_source
    from tasks.warehouse import warehouse

    root = tmp_path_factory.mktemp("mlflow-telemetry")
    uri = f"sqlite:///{root / 'team-mlflow.db'}"
    client = MlflowClient(uri)
    hf = client.create_experiment("team-hf")
    composer = client.create_experiment("team-composer")
    lightning = client.create_experiment("team-lightning")
    nemo = client.create_experiment("team-nemo")
    titan = client.create_experiment("team-torchtitan")
    runs: dict[str, str] = {}
    runs["hf"] = log_run(client, hf, 0, 280, HF_PARAMS, {"gpu": "H100", "num_gpus": 8, "n_params": 6_738_415_616},
                         hf_metrics())
    # the same trainer, but nobody tagged the GPU
    runs["hf_no_gpu"] = log_run(client, hf, 300, 580, HF_PARAMS, {"num_gpus": 8, "n_params": 6_738_415_616},
                                hf_metrics())
    runs["composer"] = log_run(client, composer, 1000, 1210, COMPOSER_PARAMS, {"gpu": "A100-80GB"},
                               composer_metrics({**{s: 50_000.0 for s in every(1, 10)}, **COMPOSER_STEADY}, 210))
    runs["composer_running"] = log_run(client, composer, 2000, None, COMPOSER_PARAMS, {"gpu": "A100-80GB"},
                                       composer_metrics({s: 9000.0 for s in every(1, 12)}, 130))
    # Lightning (MLFlowLogger + ThroughputMonitor; the trainer section logged as hyperparameters, "/"-flattened)
    runs["lightning"] = log_run(
        client, lightning, 3000, 3300,
        {"trainer/devices": 4, "trainer/num_nodes": 2, "trainer/precision": "bf16-mixed"},
        {"gpu": "H100", "n_params": 1_100_000_000, "seq_len": 2048},
        {"train/device/items_per_sec": [(s, 10 * s, 5000.0 if s <= 10 else 20000.0) for s in every(1, 25)],
         "validate/loss": [(20, 205, 3.0)]},
    )
    # NeMo (TimingCallback "train_step_timing in s"; model cfg as "cfg/..." hyperparameters)
    nemo_times = {**{s: 30.0 for s in every(1, 10)},
                  **dict(zip(every(11, 20), [8.0, 8.0, 8.0, 8.0, 8.4, 8.0, 7.6, 8.0, 8.0, 8.0], strict=True))}
    runs["nemo"] = log_run(
        client, nemo, 4000, 4500,
        {"cfg/encoder_seq_length": 4096, "cfg/global_batch_size": 256, "cfg/micro_batch_size": 1,
         "cfg/precision": "bf16-mixed", "cfg/num_layers": 32, "cfg/hidden_size": 4096,
         "cfg/activations_checkpoint_granularity": "selective", "trainer/devices": 8, "trainer/num_nodes": 4},
        {"gpu": "H100-SXM", "n_params": 7_000_000_000},
        {"train_step_timing in s": [(s, 10 * s, v) for s, v in nemo_times.items()],
         "reduced_train_loss": [(s, 10 * s, 2.0) for s in nemo_times]},
    )
    # torchtitan bridged to MLflow ("throughput(tps)" with the characters MLflow refuses stripped)
    runs["torchtitan"] = log_run(
        client, titan, 5000, 5400,
        {"training.seq_len": 8192, "training.mixed_precision_param": "bfloat16", "training.local_batch_size": 1,
         "activation_checkpoint.mode": "selective", "model.flavor": "8B"},
        {"gpu": "H100", "num_gpus": 64, "n_params": 8_030_261_248},
        {"throughputtps": [(s, 10 * s, 2000.0 if s <= 10 else 6000.0) for s in every(1, 30)],
         "validation_metrics/loss": [(20, 205, 2.2)]},
    )
    sources = [
        MlflowSource(uri, ("team-hf",), "hf_trainer"),
        MlflowSource(uri, ("team-composer",), "composer"),
        MlflowSource(uri, ("team-lightning",), "lightning"),
        MlflowSource(uri, ("team-nemo",), "nemo"),
        MlflowSource(uri, ("team-torchtitan",), "torchtitan"),
    ]
    path = root / "warehouse.duckdb"

    def ingest_all(at: datetime) -> list:
        with warehouse(path) as con:
            configured.load_tables(con)
            aliases, vocabulary = configured.aliases(), configured.vocabulary()
            return [o for s in sources for o in ingest_mlflow_source(con, s, aliases, at,
                                                                     **configured.mlflow_options(vocabulary=vocabulary))]

    first = ingest_all(datetime(2026, 1, 2, tzinfo=UTC))
    # a new Composer run that ended a day later: the second ingest reads only it
    runs["composer_new"] = log_run(client, composer, DAY / 1000, DAY / 1000 + 210, COMPOSER_PARAMS,
                                   {"gpu": "A100-80GB"},
                                   composer_metrics({**{s: 50_000.0 for s in every(1, 10)}, **COMPOSER_STEADY}, 210))
    second = ingest_all(datetime(2026, 1, 3, tzinfo=UTC))
    # the first Composer run is resumed: steps 21..30 at 10,000 tokens/s, power samples up to 300 s, finished again
    log_run(client, composer, 1000, 2 * DAY / 1000, {}, {},
            {"throughput/device/tokens_per_sec": [(s, 10 * s, 10_000.0) for s in every(21, 30)],
             **{f"system/node_{n}/gpu_0_power_usage_watts": [(i, 10 * i + 5, w) for i in range(21, 30)]
                for n, w in ((0, 300.0), (1, 320.0))}},
            run_id=runs["composer"])
    third = ingest_all(datetime(2026, 1, 4, tzinfo=UTC))
    return Scenario(uri, path, runs, first, second, third)


def read(scenario: Scenario, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(scenario.warehouse), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def current(scenario: Scenario, run: str) -> dict:
    con = duckdb.connect(str(scenario.warehouse), read_only=True)
    try:
        frame = con.sql("select * from core.telemetry_runs where run_id = $id", params={"id": scenario.runs[run]}).pl()
    finally:
        con.close()
    assert frame.height == 1, run
    return frame.row(0, named=True)


def test_hand_computed_throughput_and_power_of_two_runs(scenario: Scenario) -> None:
    hf = current(scenario, "hf")
    # steps after the warm-up (step > 10) and outside the evaluation (the step-35 interval holds eval_loss):
    # 15, 20, 25, 30, 40, 45, 50 with intervals 20, 25, 20, 20, 16, 20, 20 s; 655,360 tokens / interval / 8 GPUs
    # = 4096, 3276.8, 4096, 4096, 5120, 4096, 4096 -> median 4096 (the mean, 4125.5, would differ)
    assert hf["tokens_per_sec_per_gpu"] == pytest.approx(4096.0)
    # power in (100, 185] and (220, 276]: samples at 110..180 (8) and 230..270 (5) on 2 GPUs = 26 samples of
    # 600 and 640 W -> 620 W (the warm-up 300 W, the evaluation 200 W and the _percentage series are out)
    assert hf["avg_power_w"] == pytest.approx(620.0)
    assert hf["gpu"] == "H100-SXM" and hf["num_gpus"] == 8 and hf["seq_len"] == 4096 and hf["precision"] == "bf16"
    assert hf["params_b"] == pytest.approx(6.738415616)  # tags.n_params x 1e-9
    assert hf["global_batch_tokens"] == 1 * 4 * 8 * 4096
    assert hf["source_file"] == f"mlflow:{scenario.runs['hf']}"
    assert hf["recorded_at"] == datetime.fromtimestamp((T0 + 280_000) / 1000, tz=UTC)

    # Composer's first ingest: steps 11..20 minus 16 (evaluation at 155 s in 150..160):
    # 9000, 9100, 9200, 9300, 9400, 9600, 9700, 9800, 9900 -> median 9400 (with step 16 it would be 9450)
    history = read(scenario, "select tokens_per_sec_per_gpu, avg_power_w from core.telemetry_run_history "
                             "where run_id = ?", [scenario.runs["composer"]])
    assert history == [(pytest.approx(9400.0), pytest.approx(310.0))]
    # power in (100, 150] and (160, 200]: samples at 105..145 (5) and 165..195 (4) on 2 nodes of 300 and 320 W
    # = 18 samples -> 310 W; the 100 W warm-up and the 250 W sample at 155 s are out
    ledger = read(scenario, "select throughput_points, power_samples from raw.mlflow_runs where run_id = ? "
                            "order by read_at", [scenario.runs["composer"]])
    assert ledger[0] == (9, 18)
    assert read(scenario, "select throughput_points, power_samples from raw.mlflow_runs where run_id = ?",
                [scenario.runs["hf"]]) == [(7, 26)]


def test_every_trainer_mapping_reads_its_run(scenario: Scenario) -> None:
    # Lightning: train/device/items_per_sec, 20,000 after step 10 (15 points minus step 21, whose interval holds
    # validate/loss at 205 s) -> 20,000; GPUs = trainer/devices 4 x trainer/num_nodes 2
    lightning = current(scenario, "lightning")
    assert lightning["tokens_per_sec_per_gpu"] == pytest.approx(20000.0)
    assert lightning["num_gpus"] == 8 and lightning["precision"] == "bf16" and lightning["avg_power_w"] is None
    # NeMo: 256 x 4096 = 1,048,576 tokens per step / median step time 8.0 s / (8 x 4) GPUs = 4096
    nemo = current(scenario, "nemo")
    assert nemo["tokens_per_sec_per_gpu"] == pytest.approx(4096.0)
    assert nemo["num_gpus"] == 32 and nemo["global_batch_tokens"] == 1_048_576 and nemo["n_layers"] == 32
    # torchtitan: throughput(tps) per device, 6000 after the warm-up
    titan = current(scenario, "torchtitan")
    assert titan["tokens_per_sec_per_gpu"] == pytest.approx(6000.0)
    assert titan["seq_len"] == 8192 and titan["precision"] == "bf16" and titan["num_gpus"] == 64


def test_reader_alone_gives_contract_rows_with_a_source_reference(scenario: Scenario) -> None:
    """The reader without the warehouse (the function a lifecycle dataset calls): all finished runs of the
    experiment, one contract-shaped text row per readable run, problems beside them."""
    from tasks.telemetry.mlflow_source import SOURCE_REF, read_mlflow_runs

    frame, records, listed = read_mlflow_runs(scenario.uri, ("team-hf",), "hf_trainer", config_files.mlflow_telemetry())
    assert frame[SOURCE_REF].to_list() == [f"mlflow:{scenario.runs['hf']}"]
    assert frame["tokens_per_sec_per_gpu"].to_list() == ["4096"] and frame["avg_power_w"].to_list() == ["620"]
    assert [r.problem for r in records if r.problem] == ["missing mapped field gpu (tags.gpu)"]
    assert listed.skipped == []


def test_run_without_gpu_tag_is_quarantined_with_its_run_id(scenario: Scenario) -> None:
    run_id = scenario.runs["hf_no_gpu"]
    rows = read(scenario, "select source_file, failed_check, raw_values from quarantine.rejected_rows "
                          "where dataset = 'telemetry'")
    assert len(rows) == 1
    source_file, failed_check, raw = rows[0]
    assert source_file == f"mlflow:{run_id}"
    assert failed_check == f"MLflow run {run_id}: missing mapped field gpu (tags.gpu)"
    assert json.loads(raw)["run_id"] == run_id
    assert read(scenario, "select count(*) from core.telemetry_runs where run_id = ?", [run_id]) == [(0,)]


def test_running_run_is_skipped_not_read(scenario: Scenario) -> None:
    running = f"mlflow:{scenario.runs['composer_running']}"
    skipped = [o for o in scenario.first if o.source_file == running]
    assert [o.status for o in skipped] == ["skipped"] and "still running" in skipped[0].error
    assert read(scenario, "select count(*) from core.telemetry_runs where run_id = ?",
                [scenario.runs["composer_running"]]) == [(0,)]


def test_incremental_ingest_reads_only_the_new_run(scenario: Scenario) -> None:
    loaded_first = sorted(o.source_file for o in scenario.first if o.status == "loaded")
    assert len(loaded_first) == 6  # hf, hf_no_gpu (quarantined row), composer, lightning, nemo, torchtitan
    loaded_second = [o.source_file for o in scenario.second if o.status == "loaded"]
    assert loaded_second == [f"mlflow:{scenario.runs['composer_new']}"]
    # runs within the look-back are listed again but recognised by their fingerprint, never re-read
    others = [o for o in scenario.second if o.source_file != loaded_second[0]]
    assert all(o.status in ("already_ingested", "skipped") for o in others)


def test_changed_run_replaces_its_record_and_keeps_history(scenario: Scenario) -> None:
    assert [o.source_file for o in scenario.third if o.status == "loaded"] == [f"mlflow:{scenario.runs['composer']}"]
    composer = current(scenario, "composer")
    # 9 points of the first read + steps 21..30 at 10,000 = 19 points; the 10th smallest is 10,000
    assert composer["tokens_per_sec_per_gpu"] == pytest.approx(10000.0)
    # + 10 intervals (200..300 s) with one sample each on 2 nodes: 18 + 20 = 38 samples, still 300/320 -> 310 W
    assert composer["avg_power_w"] == pytest.approx(310.0)
    assert read(scenario, "select throughput_points, power_samples from raw.mlflow_runs where run_id = ? "
                          "order by read_at", [scenario.runs["composer"]]) == [(9, 18), (19, 38)]
    assert read(scenario, "select count(*) from core.telemetry_run_history where run_id = ?",
                [scenario.runs["composer"]]) == [(1,)]


def test_ingested_runs_train_the_model_and_count_in_the_ranking(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from tasks.config_files import load_config
    from tasks.contract.features import refresh_feature_table
    from tasks.model.predict import load_champion
    from tasks.model.training import read_training_features, train_and_register
    from tasks.publishing.night import publish_night
    from tasks.telemetry.ingest import ingest_telemetry_file
    from tasks.warehouse import warehouse
    from tests.conftest import TELEMETRY_SAMPLES
    from tests.model.conftest import BASELINE_ONLY, make_config_dir
    from tests.ranking.conftest import AWS_SAMPLE, LAMBDA_SAMPLE, ingest

    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(make_config_dir(tmp_path, BASELINE_ONLY)))
    path = tmp_path / "warehouse.duckdb"
    shutil.copy(scenario.warehouse, path)
    store = f"sqlite:///{tmp_path / 'model-store.db'}"
    with warehouse(path) as con:
        configured.load_tables(con)
        ingest_telemetry_file(con, TELEMETRY_SAMPLES / "published_benchmarks.csv", configured.aliases(),
                              datetime(2026, 1, 5,
                                       tzinfo=UTC), **configured.telemetry_options(vocabulary=configured.vocabulary()))
        ingest(con, AWS_SAMPLE, "aws")
        ingest(con, LAMBDA_SAMPLE, "lambda")
        refresh_feature_table(con, configured.reference())
        features = read_training_features(con)
        mlflow_rows = features.filter(features["run_id"].is_in(list(scenario.runs.values())))
        assert mlflow_rows.height == 6  # hf, composer, composer_new, lightning, nemo, torchtitan
        train_and_register(features, load_config("models"), configured.resources(tracking_uri=store),
                           configured.contract())
        champion = load_champion(store, configured.contract())
        assert champion is not None
        publish_night(con, champion, date(2026, 1, 5), datetime(2026, 1, 5, tzinfo=UTC),
                      configured.resources(published=tmp_path / "published.duckdb"), **configured.night())
        expected = dict(con.execute("select gpu, count(*) from core.telemetry_runs group by gpu").fetchall())
        from_mlflow = dict(con.execute("select gpu, count(*) from core.telemetry_runs where source_file like "
                                       "'mlflow:%' group by gpu").fetchall())
    assert from_mlflow == {"H100-SXM": 4, "A100-80GB": 2}  # hf, lightning, nemo, torchtitan; two Composer runs
    published = duckdb.connect(str(tmp_path / "published.duckdb"), read_only=True)
    try:
        counts = dict(published.execute(
            "select gpu, max(telemetry_runs_for_gpu) from gpu_cost_ranking where gpu in ('H100-SXM', 'A100-80GB') "
            "group by gpu").fetchall())
        assert counts == {"H100-SXM": expected["H100-SXM"], "A100-80GB": expected["A100-80GB"]}
        energy = published.execute(
            "select gpu, utilisation_of_tdp, utilisation_of_tdp_source, gpus, tdp_w, expected_hours, pue, energy_kwh "
            "from gpu_cost_ranking where not_ranked_reason is null"
        ).fetchall()
    finally:
        published.close()
    by_gpu = {row[0]: row for row in energy}
    # H100-SXM: one run with power, 620 W / 700 W TDP = 0.885714...; A100-80GB: the Composer runs 310 W / 400 W
    # = 0.775 (both runs); a GPU without measured power keeps the configured 0.9
    assert by_gpu["H100-SXM"][1] == pytest.approx(620 / 700)
    assert by_gpu["H100-SXM"][2].startswith("measured: median avg_power_w / tdp_w of 1 telemetry run")
    assert by_gpu["A100-80GB"][1] == pytest.approx(0.775)
    others = [row for row in energy if row[0] not in ("H100-SXM", "A100-80GB")]
    assert others
    assert all(r[1] == pytest.approx(0.9) and r[2].startswith("default: config/ranking.toml") for r in others)
    _, _fraction, _, gpus, _tdp, hours, pue, kwh = by_gpu["H100-SXM"]
    assert kwh == pytest.approx(gpus * 700 * (620 / 700) * hours * pue / 1000)  # = gpus x 620 W x hours x PUE


@pytest.mark.flow
def test_flow_reads_configured_mlflow_sources_and_survives_an_unknown_experiment(
    prefect_harness, scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nightly's ingest flow reads [[mlflow]] sources from config/sources.toml; a source that cannot be read
    is recorded in quarantine.rejected_files and the other sources still load."""
    import shutil

    from flows.ingest_telemetry import ingest_telemetry
    from tasks.settings import PROJECT_ROOT
    from tasks.warehouse import warehouse

    config = tmp_path / "config"
    shutil.copytree(PROJECT_ROOT / "config", config)
    (config / "sources.toml").write_text(
        f'[[mlflow]]\ntracking_uri = "{scenario.uri}"\nexperiments = ["team-nemo"]\nmapping = "nemo"\n\n'
        f'[[mlflow]]\ntracking_uri = "{scenario.uri}"\nexperiments = ["no-such-experiment"]\nmapping = "nemo"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(config))
    outcomes = ingest_telemetry()
    assert [(o.source_file, o.status) for o in outcomes] == [
        (f"mlflow:{scenario.runs['nemo']}", "loaded"),
        (f"mlflow:{scenario.uri}#no-such-experiment", "quarantined"),
    ]
    assert outcomes[1].error == "cannot read MLflow runs: no MLflow experiment named 'no-such-experiment'"
    with warehouse(configured.resources().warehouse) as con:
        assert con.sql("select count(*) from features.training_runs").fetchall() == [(1,)]
        assert con.sql("select error from quarantine.rejected_files").fetchall() == [(outcomes[1].error,)]


def test_cli_refuses_an_unknown_mapping_in_one_line() -> None:
    import subprocess
    import sys

    from tasks.settings import PROJECT_ROOT

    result = subprocess.run(
        [sys.executable, "-m", "gpucost.cli", "ingest", "telemetry", "--mlflow", "llm-sft",
         "--tracking-uri", "http://127.0.0.1:9", "--mapping", "deepspeed"],
        capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: no mapping 'deepspeed' in config/mlflow_telemetry.toml "
                                     "(mappings: composer, hf_trainer, lightning, nemo, torchtitan)")


def test_field_specs_compute_by_hand() -> None:
    from tasks.telemetry.mlflow_source import MlflowMappingError, RunProblem, _Context, resolve

    ctx = _Context(params={"trainer.devices": "8", "trainer.num_nodes": "4", "model.n_params": "6738415616",
                           "bf16": "False", "fp16": "True", "lr": "fast"},
                   tags={"gpu": "H100"}, metrics={"loss": 2.5}, fields={"seq_len": "4096"}, gpu_count=2,
                   duration_s=3600.0)
    assert resolve({"product": ["params.trainer.devices", "params.trainer.num_nodes"]}, ctx) == "32"  # 8 x 4
    assert resolve({"from": "params.model.n_params", "factor": 1e-9}, ctx) == "6.738415616"
    # bf16 is "False": not in its map, so the next spec resolves
    assert resolve({"first": [{"from": "params.bf16", "map": {"True": "bf16"}},
                              {"from": "params.fp16", "map": {"True": "fp16"}}]}, ctx) == "fp16"
    assert resolve({"product": ["params.trainer.devices", "field.seq_len"]}, ctx) == "32768"  # 8 x 4096
    assert resolve({"first": ["tags.num_gpus", "system.gpu_count"]}, ctx) == "2"
    assert resolve("params.missing", ctx) is None and resolve({"product": ["params.missing", 2]}, ctx) is None
    assert resolve({"from": "tags.absent", "default": "pretrain"}, ctx) == "pretrain"
    with pytest.raises(RunProblem, match="'fast', not a number"):
        resolve({"from": "params.lr", "factor": 2}, ctx)
    with pytest.raises(MlflowMappingError):
        resolve("hyperparams.lr", ctx)
