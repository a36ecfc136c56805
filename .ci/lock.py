"""requirements.lock: the exact versions (with hashes) that `make run` and `make test` install.

    python .ci/lock.py stamp   after `uv pip compile` (`make lock`): record which pyproject.toml it was compiled from
    python .ci/lock.py check   `make lock-check`: fail when pyproject.toml and requirements.lock disagree

The lock is compiled by uv for every Python that `requires-python` allows (`--universal`), with every extra, so
one file serves 3.11, 3.12 and 3.13. `check` needs no network: it compares a fingerprint of pyproject.toml's
dependency tables with the one the lock was stamped with, and checks that every requirement pyproject.toml
declares is pinned, at a version it allows, with hashes, for each supported Python.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path

try:
    from packaging.markers import Marker
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ModuleNotFoundError:  # a bare interpreter (before the venv exists): pip carries the same library
    from pip._vendor.packaging.markers import Marker  # type: ignore[no-redef]
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef]
    from pip._vendor.packaging.version import Version  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
LOCK = ROOT / "requirements.lock"
STAMP_PREFIX = "# pyproject.toml dependencies sha256: "
# The Pythons the lock must serve (requires-python), checked as on the machines that install it.
PYTHONS = ("3.11", "3.12", "3.13")


class LockError(Exception):
    """The lock and pyproject.toml disagree; the message says how."""


def fingerprint(pyproject: dict) -> str:
    """sha256 of what the lock is compiled from: requires-python, the dependencies and every extra."""
    project = pyproject["project"]
    spec = {
        "requires-python": project.get("requires-python", ""),
        "dependencies": project.get("dependencies", []),
        "optional-dependencies": project.get("optional-dependencies", {}),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def pins(lock_text: str) -> list[tuple[str, Version, Marker | None, int]]:
    """(name, version, marker, number of hashes) of every `name==version [; marker]` entry of a hashed lock."""
    entries = []
    for block in re.split(r"\n(?=[A-Za-z0-9])", lock_text):
        head = block.split("\\", 1)[0].strip()
        match = re.match(r"^([A-Za-z0-9._-]+)==([^ ;]+)\s*(?:;\s*(.+))?$", head)
        if match:
            name, version, marker = match.groups()
            entries.append((canonicalize_name(name), Version(version), Marker(marker) if marker else None,
                            block.count("--hash=sha256:")))
    return entries


def environment(python: str) -> dict[str, str]:
    return {"python_version": python, "python_full_version": f"{python}.0", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "sys_platform": "linux", "platform_system": "Linux",
            "os_name": "posix", "platform_machine": "x86_64", "extra": ""}


def declared(pyproject: dict) -> list[Requirement]:
    """Every requirement of the project and its extras (an extra naming the project itself adds nothing new)."""
    project = pyproject["project"]
    own = canonicalize_name(project["name"])
    found = [Requirement(r) for r in project.get("dependencies", [])]
    for requirements in project.get("optional-dependencies", {}).values():
        found += [Requirement(r) for r in requirements]
    return [r for r in found if canonicalize_name(r.name) != own]


def check(pyproject_path: Path = PYPROJECT, lock_path: Path = LOCK) -> None:
    if not lock_path.exists():
        raise LockError(f"{lock_path.name} is missing: run `make lock`")
    pyproject = tomllib.loads(pyproject_path.read_text(encoding="utf-8"))
    lock_text = lock_path.read_text(encoding="utf-8")
    stamped = next((line[len(STAMP_PREFIX):].strip() for line in lock_text.splitlines()
                    if line.startswith(STAMP_PREFIX)), None)
    if stamped != fingerprint(pyproject):
        raise LockError(f"{lock_path.name} was compiled from other dependencies than {pyproject_path.name} "
                        "declares now: run `make lock` and commit both")
    entries = pins(lock_text)
    unhashed = sorted({name for name, _, _, hashes in entries if hashes == 0})
    if unhashed:
        raise LockError(f"{lock_path.name}: no hash for {', '.join(unhashed)}: run `make lock`")
    for python in PYTHONS:
        env = environment(python)
        chosen = {name: version for name, version, marker, _ in entries if marker is None or marker.evaluate(env)}
        for requirement in declared(pyproject):
            if requirement.marker is not None and not requirement.marker.evaluate(env):
                continue
            name = canonicalize_name(requirement.name)
            if name not in chosen:
                raise LockError(f"{lock_path.name}: {requirement.name} (from {pyproject_path.name}) is not pinned "
                                f"for Python {python}: run `make lock`")
            if not requirement.specifier.contains(chosen[name], prereleases=True):
                raise LockError(f"{lock_path.name}: {requirement.name}=={chosen[name]} does not satisfy "
                                f"{pyproject_path.name}'s `{requirement}` (Python {python}): run `make lock`")


def stamp(pyproject_path: Path = PYPROJECT, lock_path: Path = LOCK) -> None:
    """Record the fingerprint under uv's header (replacing an older one)."""
    pyproject = tomllib.loads(pyproject_path.read_text(encoding="utf-8"))
    lines = [line for line in lock_path.read_text(encoding="utf-8").splitlines()
             if not line.startswith(STAMP_PREFIX)]
    header = 0
    while header < len(lines) and lines[header].startswith("#"):
        header += 1
    lines.insert(header, STAMP_PREFIX + fingerprint(pyproject))
    lock_path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    if argv[1:] == ["stamp"]:
        stamp()
        return 0
    if argv[1:] == ["check"]:
        try:
            check()
        except LockError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"{LOCK.name} matches {PYPROJECT.name} (Python {', '.join(PYTHONS)})")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
