"""MLflow artifacts stored relative to GPUCOST_HOME, so that a copied or moved home is self-contained.

Why a URI scheme of our own: MLflow's SQL tracking store resolves a relative or scheme-less artifact location
against the working directory when the experiment is created and stores it absolute (mlflow/mlflow#7670), and
copies that absolute prefix into every run's `artifact_uri` and every logged model's location; MLflow has no
relative file location (mlflow/mlflow#3144, open) and no way to repoint a local store's runs afterwards. A
`file://` location therefore ties every home to the folder it was created in: a copy keeps writing into, and
loading from, the original. The `gpucost-home:/mlflow/artifacts/...` location stored instead is resolved
when it is used, against the GPUCOST_HOME of the process using it (HomeArtifactRepository), through
MLflow's documented plugin point: an artifact repository registered for the scheme under the
`mlflow.artifact_repository` entry point (pyproject.toml), so any process of this environment (a bare
`mlflow.pyfunc.load_model`, `mlflow ui`) resolves it too. A tracking server keeps deciding for itself.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository

from tasks.settings import MLFLOW_ARTIFACTS, Environment, state_home

HOME_SCHEME = "gpucost-home"


def home_artifact_location() -> str:
    """The experiment artifact location for a local store: the artifacts folder relative to GPUCOST_HOME."""
    return f"{HOME_SCHEME}:/{MLFLOW_ARTIFACTS.as_posix()}"


def resolve_home_uri(uri: str, home: Path) -> Path:
    """`gpucost-home:/mlflow/artifacts/x` -> <GPUCOST_HOME>/mlflow/artifacts/x."""
    parsed = urlparse(uri)
    if parsed.scheme != HOME_SCHEME:
        raise ValueError(f"not a {HOME_SCHEME}: URI: {uri}")
    return home / parsed.path.lstrip("/")


class HomeArtifactRepository(LocalArtifactRepository):
    """Local files under GPUCOST_HOME, addressed by `gpucost-home:/<path inside the home>`."""

    def __init__(self, artifact_uri: str, tracking_uri: str | None = None, registry_uri: str | None = None) -> None:
        # MLflow makes this repository in any process (a bare `mlflow ui` too), so it reads GPUCOST_HOME itself
        super().__init__(resolve_home_uri(artifact_uri, state_home(Environment.current())).as_uri(), tracking_uri,
                         registry_uri)
        self.home_uri = artifact_uri


def ensure_registered() -> None:
    """Register the scheme in this process when the installed package metadata predates the entry point
    (an environment not reinstalled since); a no-op otherwise."""
    from mlflow.store.artifact.artifact_repository_registry import _artifact_repository_registry

    # mlflow's registry methods are unannotated
    if HOME_SCHEME not in _artifact_repository_registry.get_registered_artifact_repositories():  # type: ignore[no-untyped-call]
        _artifact_repository_registry.register(HOME_SCHEME, HomeArtifactRepository)  # type: ignore[no-untyped-call]
