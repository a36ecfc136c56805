"""The install: requirements.lock (what `make run` and `make test` install, `.ci/lock.py`) agrees with pyproject.toml
and prefect.yaml; a changed dependency, an unpinned or unhashed requirement makes `make lock-check` fail."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tasks.settings import PROJECT_ROOT

spec = importlib.util.spec_from_file_location("lock", PROJECT_ROOT / ".ci" / "lock.py")
assert spec is not None and spec.loader is not None
lock = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lock)

LOCK_TEXT = lock.LOCK.read_text(encoding="utf-8")


def locked_version(name: str, python: str = "3.11") -> str:
    env = lock.environment(python)
    (version,) = {str(v) for n, v, marker, _ in lock.pins(LOCK_TEXT) if n == name and (marker is None or
                                                                                          marker.evaluate(env))}
    return version


def copies(tmp_path: Path) -> tuple[Path, Path]:
    pyproject, lock_file = tmp_path / "pyproject.toml", tmp_path / "requirements.lock"
    shutil.copy(lock.PYPROJECT, pyproject)
    shutil.copy(lock.LOCK, lock_file)
    return pyproject, lock_file


def test_the_committed_lock_matches_pyproject() -> None:
    lock.check()  # raises LockError with the reason otherwise


def test_prefect_yaml_pins_the_locked_prefect() -> None:
    deployed = yaml.safe_load((PROJECT_ROOT / "prefect.yaml").read_text(encoding="utf-8"))["prefect-version"]
    assert str(deployed) == locked_version("prefect")


def test_the_lock_names_no_package_index() -> None:
    # the install takes the index pip is configured with on each machine; the lock only says what to take from it
    assert not re.search(r"--(extra-)?index-url|--find-links|https?://", LOCK_TEXT)


def test_the_lock_serves_every_supported_python() -> None:
    # numpy 2.5 needs Python >= 3.12: the universal lock pins two versions, each under its own marker
    for python in lock.PYTHONS:
        assert locked_version("numpy", python)
        assert locked_version("prefect", python) == locked_version("prefect")


def test_a_dependency_changed_in_pyproject_fails_the_check(tmp_path: Path) -> None:
    pyproject, lock_file = copies(tmp_path)
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(text.replace('"prefect>=3.4,<4"', '"prefect>=3.4,<4", "rich-click>=1"'), encoding="utf-8")
    with pytest.raises(lock.LockError, match=r"compiled from other dependencies.*run `make lock`"):
        lock.check(pyproject, lock_file)


def test_a_pin_outside_pyprojects_range_fails_the_check(tmp_path: Path) -> None:
    pyproject, lock_file = copies(tmp_path)
    # a hand edit of the lock: polars is declared >=1.30,<3
    text = re.sub(r"^polars==[^ ]+", "polars==0.20.0", lock_file.read_text(encoding="utf-8"), flags=re.MULTILINE)
    lock_file.write_text(text, encoding="utf-8")
    with pytest.raises(lock.LockError, match=r"polars==0.20.0 does not satisfy"):
        lock.check(pyproject, lock_file)


def test_a_requirement_missing_from_the_lock_fails_the_check(tmp_path: Path) -> None:
    pyproject, lock_file = copies(tmp_path)
    blocks = re.split(r"\n(?=[A-Za-z0-9])", lock_file.read_text(encoding="utf-8"))
    lock_file.write_text("\n".join(b for b in blocks if not b.startswith("tenacity==")), encoding="utf-8")
    with pytest.raises(lock.LockError, match=r"tenacity.* is not pinned for Python 3\.11"):
        lock.check(pyproject, lock_file)


@pytest.mark.slow
def test_make_lock_check_fails_with_one_line(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".ci").mkdir(parents=True)
    shutil.copy(PROJECT_ROOT / ".ci" / "lock.py", project / ".ci" / "lock.py")
    pyproject, _ = copies(project)
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace('"httpx>=0.27"', '"httpx>=0.28"'))
    done = subprocess.run([sys.executable, ".ci/lock.py", "check"], cwd=project, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == ("error: requirements.lock was compiled from other dependencies than pyproject.toml "
                           "declares now: run `make lock` and commit both\n")


def test_a_warning_from_our_code_fails_the_test_and_a_librarys_own_is_shown() -> None:
    import warnings

    # pyproject.toml's filterwarnings: raised here, in module tests.test_install, the warning is an error
    with pytest.raises(DeprecationWarning, match="a call of ours"):
        warnings.warn("a call of ours uses a deprecated API", DeprecationWarning, stacklevel=1)
    # attributed to a library's own module it is only recorded (and listed in pytest's summary)
    with warnings.catch_warnings(record=True) as shown:
        warnings.warn_explicit("a library deprecates its own API", DeprecationWarning, "lib.py", 1, module="lib")
    assert [str(w.message) for w in shown] == ["a library deprecates its own API"]


def test_the_fast_lane_refuses_a_process_when_asked(pytestconfig: pytest.Config) -> None:
    # make test-fast passes --forbid-processes: this test, not marked slow, may not start one
    if not pytestconfig.getoption("--forbid-processes"):
        pytest.skip("make test-fast's guard is off in this run")
    with pytest.raises(AssertionError, match=r"starts a process: mark it @pytest\.mark\.slow"):
        subprocess.run(["true"], check=False)
    import multiprocessing

    with pytest.raises(AssertionError, match="starts a process"):
        multiprocessing.get_context("spawn").Process(target=print).start()


def test_every_slow_entry_names_a_test_that_exists() -> None:
    from tests.conftest import SLOW_TESTS

    # a renamed test would silently leave the slow lane for make test-fast
    for entry in SLOW_TESTS:
        path, _, test = entry.partition("::")
        assert (PROJECT_ROOT / path).exists(), entry
        if test:
            assert re.search(rf"^def {re.escape(test)}\(", (PROJECT_ROOT / path).read_text(encoding="utf-8"),
                             re.MULTILINE), entry


def test_every_longest_first_entry_names_a_group_or_a_test_that_exists() -> None:
    from tests.conftest import LONGEST_FIRST, SHARED_FIXTURE_GROUPS

    # a renamed test or group would silently start late and lengthen make test
    groups = {group for _, group in SHARED_FIXTURE_GROUPS}
    for entry in LONGEST_FIRST:
        if entry in groups:
            continue
        path, _, test = entry.partition("::")
        assert (PROJECT_ROOT / path).exists(), entry
        if test:
            assert re.search(rf"^def {re.escape(test)}", (PROJECT_ROOT / path).read_text(encoding="utf-8"),
                             re.MULTILINE), entry


@pytest.mark.slow
def test_an_install_without_the_project_folders_says_so_in_one_line(tmp_path: Path) -> None:
    """A non-editable `pip install .` copies the Python packages only (pyproject's packages.find); gpucost then
    finds no sql/, expectations/, data/ or config/ beside its code: one line and exit 2 before anything starts."""
    for package in ("gpucost", "tasks", "flows"):
        shutil.copytree(PROJECT_ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    launch = (f"import sys; sys.path.insert(0, {str(tmp_path)!r}); sys.argv = ['gpucost', 'offers']; "
              "from gpucost.cli import main; main()")
    env = {"PATH": "/usr/bin:/bin", "GPUCOST_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", launch], capture_output=True, text=True, env=env, cwd=tmp_path,
                            timeout=120, check=False)
    assert result.returncode == 2, result.stderr
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert lines == [f"error: {tmp_path}: no sql/, expectations/, data/, config/ beside the code: gpucost runs from "
                     "its project folder; install it from a clone with `pip install -e .` (or `make run`)"]
