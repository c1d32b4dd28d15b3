"""Metric histories read in bulk equal MLflow's run-by-run reads, point for point.

Against real stores: a SQLite file (fast), and a real ``mlflow server`` (slow), with enough runs
that the reads are chunked.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow_server import MlflowServer
from mlflow_store import store_uri

from sweeplab.tracking import _history
from sweeplab.tracking._history import metric_histories


def _points(histories: dict[str, dict[str, list[Any]]]) -> dict[str, dict[str, list[tuple]]]:
    """Every point as a comparable tuple (NaN is not equal to itself), in order, by run and key."""
    return {
        run_id: {
            key: [
                (
                    type(m).__name__,
                    m.key,
                    "nan" if math.isnan(m.value) else m.value,
                    m.timestamp,
                    m.step,
                    m.run_id,
                )
                for m in points
            ]
            for key, points in by_key.items()
        }
        for run_id, by_key in histories.items()
    }


def _per_run(client: Any, runs: list[Any], keys: set[str] | None = None) -> dict:
    return {
        run.info.run_id: {
            key: client.get_metric_history(run.info.run_id, key)
            for key in run.data.metrics
            if keys is None or key in keys
        }
        for run in runs
    }


def _log_runs(client: Any, n_runs: int, points_of_loss: int = 5) -> list[Any]:
    """``n_runs`` runs of one experiment: ``loss`` with a NaN, an infinity and a step logged twice
    (once at the same timestamp), ``acc`` in some runs, ``lr`` logged once, and no metric in one.
    """
    from mlflow.entities import Metric

    experiment_id = client.create_experiment("bulk")
    for index in range(n_runs):
        run_id = client.create_run(experiment_id).info.run_id
        if index == 3:
            continue  # a run without metrics
        base = 1_700_000_000_000 + index
        metrics = [
            Metric("loss", 1.0 / (step + index + 1), base + 10 * step, step)
            for step in range(points_of_loss)
        ]
        metrics += [
            Metric("loss", math.nan, base + 1, 1),  # step 1 again, after its first value
            Metric("loss", -0.5, base, 0),  # step 0 again at the same timestamp: ordered by value
            Metric("loss", math.inf, base + 5, 7),
            Metric("lr", 0.01 * (index + 1), base, 0),
        ]
        if index % 2 == 0:
            metrics += [Metric("acc", 0.1 * step, base + 3 * step, step) for step in (2, 0, 1)]
        for start in range(0, len(metrics), 1000):
            client.log_batch(run_id, metrics=metrics[start : start + 1000])
    return client.search_runs([experiment_id], max_results=1000)


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str, list[Any]]:
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path_factory.mktemp('bulk') / 'mlflow.db'}"
    client = MlflowClient(uri)
    return client, uri, _log_runs(client, 7)


def test_sql_bulk_equals_per_run(
    sqlite_store: tuple[Any, str, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, uri, runs = sqlite_store
    monkeypatch.setattr(_history, "SQL_RUNS_PER_QUERY", 2)  # 7 runs: 4 queries a key
    expected = _points(_per_run(client, runs))
    assert sum(len(points) for by_key in expected.values() for points in by_key.values()) > 50
    assert _points(metric_histories(client, uri, runs)) == expected
    # The bulk path itself answered (not the per-run fallback).
    wanted = {"loss": [r.info.run_id for r in runs if "loss" in r.data.metrics]}
    read = _history._read_bulk(client, uri, wanted)
    assert read is not None
    by_run = {r: {"loss": read[(r, "loss")]} for r in wanted["loss"]}
    assert _points(by_run) == {r: {"loss": expected[r]["loss"]} for r in wanted["loss"]}


def test_keys_filter(sqlite_store: tuple[Any, str, list[Any]]) -> None:
    client, uri, runs = sqlite_store
    histories = metric_histories(client, uri, runs, keys={"acc", "missing"})
    assert _points(histories) == _points(_per_run(client, runs, {"acc"}))
    assert sorted(len(by_key) for by_key in histories.values()) == [0, 0, 0, 1, 1, 1, 1]


@pytest.mark.parametrize("store", ["other-scheme", "bulk-fails"])
def test_fallback_equals_per_run(
    sqlite_store: tuple[Any, str, list[Any]], store: str, tmp_path: Path
) -> None:
    client, _, runs = sqlite_store
    uri = "bogus://nowhere"  # a scheme without a bulk read
    if store == "bulk-fails":  # a SQL store whose bulk read raises
        (tmp_path / "garbage.db").write_text("not a database")
        uri = f"sqlite:///{tmp_path / 'garbage.db'}"
    assert _points(metric_histories(client, uri, runs)) == _points(_per_run(client, runs))


def test_no_runs(sqlite_store: tuple[Any, str, list[Any]]) -> None:
    client, uri, _ = sqlite_store
    assert metric_histories(client, uri, []) == {}


def test_the_sql_store_still_reads_in_bulk() -> None:
    """The store method the bulk read calls (its private helpers are raycompat rows)."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    assert callable(SqlAlchemyStore.get_metric_history_bulk)


@pytest.fixture
def server_runs(tmp_path: Path) -> Iterator[tuple[Any, Any, str, list[Any]]]:
    """A real ``mlflow server`` over a SQLite store that holds 102 runs.

    101 runs with 250 losses each (and one run without metrics): the first 100 fill the server's
    25,000-point answer, so they are read again run by run; `lr` takes two requests. The runs are
    written into the file before the server starts (a copy of an empty store, in WAL mode), not
    through the server: the test is about the server's read route, and 200 writes over HTTP,
    each synced to disk, took 19 s here.
    """
    from mlflow import MlflowClient

    from sweeplab.tracking import write_ahead_log

    folder = tmp_path / "server"
    uri = store_uri(folder)
    assert write_ahead_log(uri)
    local = MlflowClient(uri)
    runs = _log_runs(local, 102, points_of_loss=247)
    server = MlflowServer(folder)  # serves folder/mlflow.db: the store written above
    try:
        server.start()
        yield local, MlflowClient(server.uri), server.uri, runs
    finally:
        server.stop()


# The server's SQL store is the one the fast tests read; on PostgreSQL this test takes twice as
# long and checks the same handler, so it runs on the server's SQLite store only.
@pytest.mark.slow
def test_http_bulk_equals_per_run(server_runs: tuple[Any, Any, str, list[Any]]) -> None:
    local, client, uri, runs = server_runs
    # MLflow's run-by-run reads of the same file, without the server, are the reference.
    expected = _points(_per_run(local, runs))
    assert _points(metric_histories(client, uri, runs)) == expected
    keys = ("loss", "lr", "acc")
    wanted = {key: [r.info.run_id for r in runs if key in r.data.metrics] for key in keys}
    assert [len(wanted[key]) for key in keys] == [101, 101, 51]
    read = _history._read_http(client, uri, wanted)  # the REST path itself, no fallback
    assert _points({r: {k: read[(r, k)] for k in wanted if r in wanted[k]} for r in expected}) == {
        r: {k: expected[r][k] for k in wanted if r in wanted[k]} for r in expected
    }
