"""Fixtures of the tracking tests: real MLflow servers, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow_server import MlflowServer
from mlflow_store import store_uri
from postgres import PostgresCluster, postgres_bin_dir, sqlalchemy_uri

_database_numbers = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL cluster on 127.0.0.1 for the session (``make postgres``)."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.fail("PostgreSQL is not installed: run `make postgres` (Debian's postgresql)")
    cluster = PostgresCluster(bin_dir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_store_uri(request: pytest.FixtureRequest) -> str | None:
    """The backend store of an ``mlflow server``: None (its SQLite file) or a fresh database."""
    if request.param == "sqlite":
        return None
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    return sqlalchemy_uri(cluster.create_database(f"mlflow_{next(_database_numbers)}"))


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_store_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new MLflow SQL store written directly by the client: a SQLite file or a fresh
    PostgreSQL database."""
    if request.param == "sqlite":
        return store_uri(tmp_path)
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    return sqlalchemy_uri(cluster.create_database(f"store_{next(_database_numbers)}"))


@pytest.fixture
def mlflow_server(tmp_path: Path, backend_store_uri: str | None) -> Iterator[MlflowServer]:
    server = MlflowServer(tmp_path / "server", backend_store_uri=backend_store_uri)
    try:
        server.start()
        yield server
    finally:
        server.stop()
