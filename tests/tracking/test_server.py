"""Sweeps logged over HTTP to a real ``mlflow server``, including one that goes away.

Each test runs twice: on the server's default SQLite store and on a real PostgreSQL database
(tests/tracking/conftest.py), the store MLflow runs on for a team.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from _helpers import N_ITER, children, make_trainable, tune_results
from mlflow_server import MlflowServer
from postgres import libpq_uri

from sweeplab.tracking import SweepTracker, best_trial
from sweeplab.tracking._flusher import QUIET_URLS
from sweeplab.tracking._quick import quick_best
from sweeplab.tracking._read import _best_from_parent, latest_sweep_run

pytestmark = pytest.mark.slow


def _run_sweep(uri: str, root: Path, name: str, xs: list[int], sleep_s: float) -> tuple:
    from ray import tune

    tracker = SweepTracker(
        tracking_uri=uri, sweep_name=name, storage_dir=root / "sweep", metric="loss",
        mode="min", max_iterations=N_ITER,
    )  # fmt: skip
    tracker.start()
    grid = tune.Tuner(
        make_trainable(root / "ckpt", sleep_s=sleep_s),
        param_space={"x": tune.grid_search(xs)},
        tune_config=tune.TuneConfig(metric="loss", mode="min"),
        run_config=tune.RunConfig(
            name=name, storage_path=str(root / "ray"), verbose=0,
            callbacks=[tracker.tune_callback()],
        ),
    ).fit()  # fmt: skip
    return tracker, grid, tracker.finish()


def _assert_complete(uri: str, tracker: SweepTracker, grid) -> None:  # type: ignore[no-untyped-def]
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    assert tracker.experiment_id is not None and tracker.parent_run_id is not None
    runs = children(client, tracker.parent_run_id, tracker.experiment_id)
    by_trial = {r.data.tags["sweeplab.trial_id"]: r for r in runs}
    assert len(by_trial) == len(runs) == len(list(grid))
    for result in grid:
        run = by_trial[result.metrics["trial_id"]]
        rows = tune_results(result.path)
        assert len(rows) == len(result.metrics_dataframe) == N_ITER
        for key in ("loss", "acc", "time_total_s"):
            history = client.get_metric_history(run.info.run_id, key)
            assert sorted(m.step for m in history) == [r["training_iteration"] for r in rows]
        assert run.info.status == "FINISHED"
        assert run.data.tags["sweeplab.status"] == "finished"


def _assert_in_postgres(uri: str, tracker: SweepTracker, n_runs: int) -> None:
    """The runs really are rows of the PostgreSQL database, read without MLflow."""
    import psycopg

    with psycopg.connect(libpq_uri(uri)) as connection:
        rows = connection.execute(
            "SELECT status, count(*) FROM runs WHERE experiment_id = %s GROUP BY status",
            (int(tracker.experiment_id or -1),),
        ).fetchall()
    assert dict(rows) == {"FINISHED": n_runs}


def test_sweep_over_http(
    ray_local: None,
    mlflow_server: MlflowServer,
    backend_store_uri: str | None,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mlflow import MlflowClient

    monkeypatch.delenv(QUIET_URLS, raising=False)  # as a user's process has it
    tracker, grid, summary = _run_sweep(mlflow_server.uri, tmp_path, "http", [0, 1, 2], 0.01)
    # MLflow prints a "View run" link per ended run; a sweep prints only its parent run's.
    assert capfd.readouterr().out.count("View run") == 1
    assert QUIET_URLS not in os.environ
    _assert_complete(mlflow_server.uri, tracker, grid)
    client = MlflowClient(mlflow_server.uri)
    assert tracker.parent_run_id is not None
    files = [a.path for a in client.list_artifacts(tracker.parent_run_id, "best_checkpoint")]
    assert files == ["best_checkpoint/weights.txt"]
    assert list((mlflow_server.root / "artifacts").rglob("weights.txt"))
    assert best_trial("http", tracking_uri=mlflow_server.uri)["trial_id"] == summary.best.trial_id
    # `best` read over the REST API without MLflow equals the read through MlflowClient.
    parent = latest_sweep_run(client, "http", mlflow_server.uri)
    through_mlflow = _best_from_parent(client, parent, mlflow_server.uri)
    assert quick_best("http", mlflow_server.uri) == through_mlflow
    assert through_mlflow["trial_id"] == summary.best.trial_id
    assert not (tmp_path / "sweep" / "mlflow_undelivered.jsonl").exists()
    if backend_store_uri is not None:
        _assert_in_postgres(backend_store_uri, tracker, n_runs=1 + 3)
        assert not (mlflow_server.root / "mlflow.db").exists()


# The client's retry path is the same whatever the server stores its runs in, so the outage runs
# on the production backend only (the SQLite server is covered by test_sweep_over_http).
@pytest.mark.parametrize("backend_store_uri", ["postgresql"], indirect=True)
def test_server_outage_loses_nothing(
    ray_local: None,
    backend_store_uri: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Exercise sweeplab's own retry loop, not MLflow's HTTP retries (which would mostly hide it).
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    server = MlflowServer(tmp_path / "server", backend_store_uri=backend_store_uri)
    outage: dict[str, float] = {}

    def bounce() -> None:
        time.sleep(6)
        server.stop()
        outage["down"] = time.monotonic()
        time.sleep(4)
        server.start()
        outage["up"] = time.monotonic()
        print(f"server down for {outage['up'] - outage['down']:.1f} s")

    try:
        server.start()
        thread = threading.Thread(target=bounce, daemon=True)
        thread.start()
        begin = time.monotonic()
        tracker, grid, _ = _run_sweep(server.uri, tmp_path, "outage", [0, 1, 2, 3], 0.5)
        print(f"sweep + finish took {time.monotonic() - begin:.1f} s")
        thread.join(timeout=120)
        assert "up" in outage  # the server really went away during the sweep
        _assert_complete(server.uri, tracker, grid)
        assert not (tmp_path / "sweep" / "mlflow_undelivered.jsonl").exists()
        if backend_store_uri is not None:
            _assert_in_postgres(backend_store_uri, tracker, n_runs=1 + 4)
    finally:
        server.stop()
