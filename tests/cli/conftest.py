"""Fixtures of the command-line tests (the session's nightly run itself is `night`, in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.night import Night


@pytest.fixture
def env_for(night: Night):
    """The night's environment with GPUCOST_HOME pointed at another folder."""

    def make(home: Path) -> dict[str, str]:
        return {**night.env, "GPUCOST_HOME": str(home)}

    return make
