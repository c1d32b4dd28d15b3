"""Fixtures of the tracking tests: real MLflow servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow_server import MlflowServer


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[MlflowServer]:
    server = MlflowServer(tmp_path / "server")
    try:
        server.start()
        yield server
    finally:
        server.stop()
