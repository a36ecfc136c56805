"""Fetch tests: real HTTP against a local replay server (127.0.0.1), a real warehouse per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from tasks.settings import PROJECT_ROOT
from tests.fetch import replay


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    return ("127.0.0.1", 0)


@pytest.fixture(autouse=True)
def no_real_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """boto3 must never look for credentials or regions outside the test (no instance metadata, no ~/.aws)."""
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "GPUCOST_GCP_API_KEY", "GPUCOST_LAMBDA_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def providers(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[replay.Replay]:
    """Every provider replayed on the local server; config and environment pointing at it."""
    state = replay.install(httpserver)
    for name, value in replay.environment(httpserver).items():
        monkeypatch.setenv(name, value)
    config_dir = replay.write_config_dir(tmp_path / "config", PROJECT_ROOT / "config")
    monkeypatch.setenv("GPUCOST_CONFIG_DIR", str(config_dir))
    yield state
