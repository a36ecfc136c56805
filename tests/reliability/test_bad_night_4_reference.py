"""A bad night, part 4: reference data that cannot lie, and prices that are plausible per GPU. Each probe runs the
real `gpucost` command and checks its exit code, its one line, and that nothing else changed on disk (checksums of
the warehouse's tables and of the published file).

- A region_carbon.csv edited to -500, nan, 1e30, text, or with a region twice: every command that reads it stops
  before anything starts (exit 2), naming the file, the line and the column (it published negative CO2e, ranked
  best, or ended in a traceback).
- A new 8 x H100 offer at 3.0 USD/h (0.375 per GPU-hour): quarantined naming its figure and the median's (it was
  stored and published #1).
- An owned price list with electricity `nan`, PUE 1000 or 1e6 USD/kWh: those rows quarantined saying why (they
  loaded; the `nan` one was ranked at $/Mtoken nan).
"""

from __future__ import annotations

import csv
import os
import shutil
import statistics
import subprocess
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from tests.reliability.conftest import States
from tests.reliability.driver import PRICES
from tests.reliability.helpers import GPUCOST, assert_one_line, published_checksums, warehouse_checksums
from tests.reliability.test_bad_night import gpucost

CARBON = Path(__file__).parents[2] / "data" / "reference" / "region_carbon.csv"
US_EAST_1 = 'aws,us-east-1,244.76,2023,,"EPA eGRID2023 state CO2e output rate, Virginia (via codecarbon 3.3.2)"'


@pytest.fixture
def work_home(base_states: States, monkeypatch: pytest.MonkeyPatch) -> States:
    """The shared state folder, holding the `base` state (lambda + AWS spot prices, telemetry, a champion, a night
    published)."""
    monkeypatch.setenv("GPUCOST_HOME", str(base_states.work))
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(base_states.config))
    return base_states


def config_with(states: States, tmp_path: Path, reference: dict[str, Path] | None = None,
                replace: tuple[str, str, str] | None = None) -> dict[str, str]:
    """The tests' config with settings.toml [reference] pointing at other files, or (file, old, new) replaced."""
    config = shutil.copytree(states.config, tmp_path / "config")
    settings = config / "settings.toml"
    text = settings.read_text(encoding="utf-8")
    for key, path in (reference or {}).items():
        old = next(line for line in text.splitlines() if line.startswith(f"{key} = "))
        text = text.replace(old, f'{key} = "{path}"')
    settings.write_text(text, encoding="utf-8")
    if replace is not None:
        name, old, new = replace
        edited = (config / name).read_text(encoding="utf-8")
        assert old in edited
        (config / name).write_text(edited.replace(old, new), encoding="utf-8")
    return {"GPUCOST_CONFIG_DIR": str(config)}


def carbon_with(tmp_path: Path, old: str, new: str) -> Path:
    text = CARBON.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path = tmp_path / "region_carbon.csv"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def line_of(path: Path, fragment: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if fragment in line)


# ------------------------------------------------------------------------------- region_carbon.csv that lies

EDITS = {  # name -> (new us-east-1 line, or None: the line listed twice; the reason in the error line)
    "negative": (US_EAST_1.replace(",244.76,", ",-500,"),
                 "grid_gco2e_per_kwh: must be a number from 0 to 2000 (g CO2e per kWh) (got '-500')"),
    "nan": (US_EAST_1.replace(",244.76,", ",nan,"),
            "grid_gco2e_per_kwh: must be a number from 0 to 2000 (g CO2e per kWh) (got 'nan')"),
    "huge": (US_EAST_1.replace(",244.76,", ",1e30,"),
             "grid_gco2e_per_kwh: must be a number from 0 to 2000 (g CO2e per kWh) (got '1e30')"),
    "text": (US_EAST_1.replace(",244.76,", ",about 245,"),
             "grid_gco2e_per_kwh: must be a number from 0 to 2000 (g CO2e per kWh) (got 'about 245')"),
    "twice": (None, "provider + region: aws us-east-1 is listed twice (first on line {line}; one row each)"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_region_carbon_file_that_lies_stops_publish_and_run_before_they_start(
        work_home: States, tmp_path: Path, edit: str) -> None:
    home = work_home.restore("base")
    line, reason = EDITS[edit]
    carbon = carbon_with(tmp_path, US_EAST_1, f"{US_EAST_1}\n{US_EAST_1}" if line is None else line)
    number = line_of(carbon, "aws,us-east-1,") + (1 if line is None else 0)
    env = config_with(work_home, tmp_path, reference={"region_carbon": carbon})
    before = warehouse_checksums(home / "warehouse.duckdb"), published_checksums(home / "published.duckdb")
    published_bytes = (home / "published.duckdb").read_bytes()

    for command in (("publish",), ("run",)) if edit == "negative" else (("publish",),):
        returncode, stderr = gpucost(work_home, *command, env=env, timeout=300)

        assert returncode == 2, stderr[-3000:]
        assert_one_line(stderr, f"error: {carbon}: line {number}: {reason.format(line=number - 1)}")
    assert (warehouse_checksums(home / "warehouse.duckdb"), published_checksums(home / "published.duckdb")) == before
    assert (home / "published.duckdb").read_bytes() == published_bytes


def test_a_bad_reference_file_of_the_adapters_stops_an_ingest_before_it_starts(
        work_home: States, tmp_path: Path) -> None:
    """Every reference file loads through the same checks: here one of the price adapters' lookup tables."""
    home = work_home.restore("base")
    folder = shutil.copytree(CARBON.parent, tmp_path / "reference")
    shapes = folder / "aws_instance_gpus.csv"
    shapes.write_text(shapes.read_text(encoding="utf-8").replace("p5.48xlarge,H100,8,", "p5.48xlarge,H100,eight,"),
                      encoding="utf-8")
    env = config_with(work_home, tmp_path, reference={"folder": folder})
    before = warehouse_checksums(home / "warehouse.duckdb")

    returncode, stderr = gpucost(work_home, "ingest", "prices", "--provider", "aws", "--format", "skypilot",
                                 str(PRICES / "skypilot_v8_aws_gpu_subset.csv"), env=env, timeout=300)

    assert returncode == 2, stderr[-3000:]
    number = line_of(shapes, "p5.48xlarge,H100,eight,")
    assert_one_line(stderr, f"error: {shapes}: line {number}: gpu_count: must be a number above 0 and at most 1024 "
                            "(GPUs per instance) (got 'eight')")
    assert warehouse_checksums(home / "warehouse.duckdb") == before


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("owned_pue = 1.4", "owned_pue = inf", "energy.owned_pue: input should be a finite number (got inf)"),
    ("cloud_pue = 1.2", "cloud_pue = 1e6", "energy.cloud_pue: must be <= 3 (got 1000000.0)"),
    ("# example-lab-eu = 250.0", "example-lab-eu = 3000.0",
     "carbon.owned_gco2e_per_kwh.example-lab-eu: must be <= 2000 (got 3000.0)"),
])
def test_a_ranking_energy_or_carbon_figure_out_of_bounds_is_a_config_error(
        work_home: States, tmp_path: Path, key: str, value: str, reason: str) -> None:
    home = work_home.restore("base")
    env = config_with(work_home, tmp_path, replace=("ranking.toml", key, value))
    before = warehouse_checksums(home / "warehouse.duckdb"), published_checksums(home / "published.duckdb")

    returncode, stderr = gpucost(work_home, "publish", env=env, timeout=300)

    assert returncode == 2, stderr[-3000:]
    assert_one_line(stderr, "ranking.toml: ", reason)
    assert (warehouse_checksums(home / "warehouse.duckdb"), published_checksums(home / "published.duckdb")) == before


# ----------------------------------------------------------------------------------- per GPU or per instance

HEADER = ["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo", "Price", "SpotPrice",
          "Region", "AvailabilityZone", "Arch"]
H100_INFO = ("{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 8, 'MemoryInfo': {'SizeInMiB': 81920}}], "
             "'TotalGpuMemoryInMiB': 655360}")


def fresh_ingest(prefect_env: dict[str, str], home: Path, config: Path) -> tuple[int, str]:
    """`gpucost ingest prices` over the sources file of `config`, in a state folder of its own."""
    env = {**os.environ, "GPUCOST_HOME": str(home), "GPUCOST_CONFIG_DIR": str(config), **prefect_env}
    done = subprocess.run([str(GPUCOST), "ingest", "prices"], env=env, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stderr


def test_a_per_gpu_price_given_as_the_instance_price_is_quarantined_not_stored(
        prefect_harness: None, tmp_path: Path) -> None:
    """Two real catalogs (AWS, Lambda: H100 on-demand of two providers, both current), then a new 8 x H100 offer at
    3.0 USD/h (the per-GPU price read as the instance's: 0.375 per GPU-hour)."""
    from prefect.settings import PREFECT_API_URL

    probe = tmp_path / "new_offer.csv"
    with open(probe, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(HEADER)
        writer.writerow(["p5.probe", "H100", "8.0", "192.0", "2048.0", H100_INFO, "3.0", "", "us-east-1",
                         "us-east-1a", "x86_64"])
    config = shutil.copytree(Path(__file__).parents[2] / "config", tmp_path / "config")
    entries = [(PRICES / "skypilot_v8_aws_gpu_subset.csv", "aws"), (PRICES / "skypilot_v8_lambda_gpu.csv", "lambda"),
               (probe, "aws")]
    (config / "sources.toml").write_text("\n".join(
        f'[[prices]]\npath = "{path}"\nprovider = "{provider}"\nformat = "skypilot"\n' for path, provider in entries),
        encoding="utf-8")
    home = tmp_path / "home"
    prefect_env = {"PREFECT_API_URL": str(PREFECT_API_URL.value())} if PREFECT_API_URL.value() else {}

    returncode, stderr = fresh_ingest(prefect_env, home, config)

    assert returncode == 0, stderr[-3000:]
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        # the median worked out here from the two catalogs' current H100 on-demand offers (within 180 days of the
        # newest: both were observed at this ingest)
        rows = con.execute("select usd_per_gpu_hour, observed_at, provider from core.prices_current "
                           "where gpu = 'H100-SXM' and pricing = 'on_demand' and source_file <> $f",
                           {"f": str(probe)}).fetchall()
        newest = max(at for _, at, _ in rows)
        assert min(at for _, at, _ in rows) >= newest - timedelta(days=180)
        median = statistics.median(price for price, _, _ in rows)
        assert {provider for _, _, provider in rows} == {"aws", "lambda"} and 0.1 * median > 0.375
        rejected = con.execute("select failed_check from quarantine.rejected_rows where source_file = $f",
                               {"f": str(probe)}).fetchall()
        assert len(rejected) == 1
        assert rejected[0][0].endswith(
            f"usd_per_gpu_hour 0.375 is below 0.1 × the H100-SXM on-demand median {median:.3g} across 2 providers "
            f"({len(rows)} current offers); the price given, 3 USD/h, is plausible per GPU-hour, not for the whole "
            "8-GPU instance (a per-GPU price read as per instance?)")
        assert con.execute("select count(*) from core.price_observations where instance_type = 'p5.probe'")\
            .fetchall() == [(0,)]
        # the real catalogs: every row they priced is stored or quarantined for reasons of their own, never this one
        assert con.execute("select count(*) from quarantine.rejected_rows "
                           "where failed_check like '%share_of_gpu_median%'").fetchall() == [(1,)]


# ------------------------------------------------------------------------------------ owned price list figures

OWNED = [  # site, electricity_usd_per_kwh, pue, the reason (None: loaded)
    ("lab-nan", "nan", "1.3", "electricity_usd_per_kwh nan is not a finite number"),
    ("lab-pue", "0.2", "1000", "pue 1000 is above max_pue = 3 (config/settings.toml [validation.prices])"),
    ("lab-mwh", "1e6", "1.2", "electricity_usd_per_kwh 1e6 is above max_electricity_usd_per_kwh = 2 "
                              "(config/settings.toml [validation.prices]) (a price per MWh?)"),
    ("lab-text", "cheap", "", "electricity_usd_per_kwh cheap is not a finite number"),
    ("lab-ok", "0.21", "1.3", None),
]


def test_an_owned_price_list_with_nan_or_absurd_site_figures_is_quarantined_row_by_row(
        prefect_harness: None, work_home: States, tmp_path: Path) -> None:
    home = work_home.restore("base")
    owned = tmp_path / "owned.csv"
    owned.write_text("site,gpu,gpu_count,usd_per_gpu_hour_amortised,electricity_usd_per_kwh,pue\n" + "".join(
        f"{site},H100,8,1.85,{kwh},{pue}\n" for site, kwh, pue, _ in OWNED), encoding="utf-8")
    before = warehouse_checksums(home / "warehouse.duckdb")

    returncode, stderr = gpucost(work_home, "ingest", "prices", "--provider", "owned", "--format", "owned",
                                 str(owned), timeout=300)

    assert returncode == 0, stderr[-3000:]
    with duckdb.connect(str(home / "warehouse.duckdb"), read_only=True) as con:
        reasons = dict(con.execute("select json_extract_string(raw_values, '$.site'), failed_check "
                                   "from quarantine.rejected_rows where source_file = $f",
                                   {"f": str(owned)}).fetchall())
        stored = con.execute("select region, electricity_usd_per_kwh, pue from core.price_observations "
                             "where provider = 'owned'").fetchall()
        # nothing stored before is changed or lost: the base state's tables hold what they held
        after = {name: con.execute("select count(*), sum(hash(t)::hugeint) from query_table($n) t",
                                   {"n": name}).fetchall()[0] for name in before}
    assert reasons == {site: reason for site, _, _, reason in OWNED if reason is not None}
    assert stored == [("lab-ok", 0.21, 1.3)]
    changed = {name for name in before if after[name] != before[name]}
    assert changed == {"raw.ingested_files", "core.price_observations", "quarantine.rejected_rows"}
