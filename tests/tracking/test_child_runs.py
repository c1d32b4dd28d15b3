"""A sweep's child runs read from a SQL store's tables equal MLflow's own search, run for run.

Against real stores: a SQLite file and a real PostgreSQL database, each written by MLflow.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from mlflow_store import store_uri

from sweeplab.keys import ROLE_SWEEP, ROLE_TAG
from sweeplab.tracking import _child_runs
from sweeplab.tracking._child_runs import child_runs_from_tables
from sweeplab.tracking._flusher import PARENT_TAG
from sweeplab.tracking._read import _children


def _sweep(client: Any, n_children: int = 12) -> Any:
    """A parent run and its children: tags, params, metrics with a NaN and a step logged twice,
    one child without metrics, one deleted, one finished and one failed; beside them a child of
    another parent and a run of another experiment."""
    from mlflow.entities import Metric, Param, RunTag

    experiment = client.create_experiment("children")
    parent = client.create_run(experiment, tags={ROLE_TAG: ROLE_SWEEP}, run_name="sweep")
    other = client.create_run(experiment, tags={ROLE_TAG: ROLE_SWEEP})
    client.create_run(experiment, tags={PARENT_TAG: other.info.run_id})
    elsewhere = client.create_experiment("elsewhere")
    client.create_run(elsewhere, tags={PARENT_TAG: parent.info.run_id})
    for index in range(n_children):
        run = client.create_run(
            experiment,
            tags={PARENT_TAG: parent.info.run_id},
            run_name=None if index == 5 else f"t{index:02d}",
            start_time=1_700_000_000_000 + 1000 * (index % 4),  # ties: ordered by run id
        )
        run_id = run.info.run_id
        if index == 3:
            continue  # no metrics, params or more tags
        base = 1_700_000_000_000 + index
        metrics = [Metric("loss", 1.0 / (step + index + 1), base + step, step) for step in range(3)]
        metrics += [Metric("loss", 0.25, base + 9, 2), Metric("acc", math.nan, base, 0)]
        client.log_batch(
            run_id,
            metrics=metrics,
            params=[Param("lr", str(0.1 / (index + 1))), Param("opt", "sgd")],
            tags=[RunTag("sweeplab.trial_id", f"trial_{index}"), RunTag("note", "x" * 600)],
        )
        if index == 7:
            client.delete_run(run_id)
        elif index % 3 == 0:
            client.set_terminated(run_id, "FINISHED", end_time=base + 50)
        elif index == 4:
            client.set_terminated(run_id, "FAILED")
    return client.get_run(parent.info.run_id)


def _comparable(run: Any) -> tuple[Any, ...]:
    info, data = run.info, run.data
    metrics = {k: "nan" if math.isnan(v) else v for k, v in data.metrics.items()}
    return (
        info.run_id,
        info.run_name,
        info.experiment_id,
        info.user_id,
        info.status,
        info.start_time,
        info.end_time,
        info.lifecycle_stage,
        info.artifact_uri,
        data.tags,
        data.params,
        metrics,
    )


def _searched(client: Any, parent: Any, uri: str, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The children as MLflow's own search returns them (the tables' read switched off)."""
    with monkeypatch.context() as patch:
        patch.setattr("sweeplab.tracking._read.child_runs_from_tables", lambda uri, parent: None)
        return _children(client, parent, uri)


def test_table_read_equals_mlflow_search(
    sql_store_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    uri = sql_store_uri
    client = MlflowClient(uri)
    parent = _sweep(client)
    read = child_runs_from_tables(uri, parent)
    searched = _searched(client, parent, uri, monkeypatch)
    assert read is not None
    assert len(searched) == 11  # 12 children, one deleted
    assert [_comparable(r) for r in read] == [_comparable(r) for r in searched]
    assert type(read[0]) is type(searched[0])
    # `_children` reads the tables: the same runs as the search.
    assert [_comparable(r) for r in _children(client, parent, uri)] == [
        _comparable(r) for r in searched
    ]


def test_other_stores_and_failures_fall_back_to_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    uri = store_uri(tmp_path)
    client = MlflowClient(uri)
    parent = _sweep(client, n_children=4)
    assert child_runs_from_tables(f"file://{tmp_path / 'mlruns'}", parent) is None

    def broken(uri: str) -> Any:
        raise RuntimeError("no store")

    monkeypatch.setattr(_child_runs, "tracking_store", broken)
    assert child_runs_from_tables(uri, parent) is None
    assert [r.info.run_id for r in _children(client, parent, uri)] == [
        r.info.run_id for r in _searched(client, parent, uri, monkeypatch)
    ]
