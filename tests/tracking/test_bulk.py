"""Child runs written in bulk equal the same runs written through MLflow's client, row for row.

Against real stores: a SQLite file and a real PostgreSQL database. Two flushers get the same
trial events, one with the bulk writer and one without, each under its own parent run; the
runs, tags, params, latest metrics and metric histories MLflow reads back must be the same.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from mlflow_server import MlflowServer
from mlflow_store import store_uri
from postgres import PostgresCluster, libpq_uri, sqlalchemy_uri

from sweeplab.keys import STATUS_TAG, TRIAL_ID_TAG
from sweeplab.tracking import _bulk
from sweeplab.tracking._bulk import DATABASE_ENV, SqlBulk, redacted, sql_bulk
from sweeplab.tracking._flusher import PARENT_TAG, RUN_NAME_TAG, Flusher

T0 = 1_700_000_000_000


class _Counting:
    """An MlflowClient that counts the calls the flusher makes."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return method(*args, **kwargs)

        return counted


def _flusher(uri: str, experiment_id: str, *, bulk: bool) -> tuple[Flusher, _Counting, str]:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    parent = client.create_run(experiment_id, run_name="bulk" if bulk else "client")
    counting = _Counting(MlflowClient(uri))
    flusher = Flusher(
        client_factory=lambda: counting,
        experiment_id=experiment_id,
        parent_run_id=parent.info.run_id,
        interval_s=0.05,
        hold_s=0.0,
        bulk_factory=(lambda: sql_bulk(uri, experiment_id, parent.info.run_id)) if bulk else None,
    )
    return flusher, counting, parent.info.run_id


def _add(flusher: Flusher, trial: str, **params: str) -> None:
    flusher.add_run(
        trial,
        run_name=trial,
        tags={TRIAL_ID_TAG: trial, STATUS_TAG: "RUNNING"},
        params=params,
    )


def _first_phase(flusher: Flusher) -> None:
    """Runs to create: ended, failed, still running, and one with a name MLflow rejects."""
    _add(flusher, "t1", lr="0.1", long="x" * 7000)
    flusher.set_tags("t1", {STATUS_TAG: "RUNNING"})
    flusher.log_metrics(
        "t1",
        [
            ("loss", 0.9, T0, 0),
            ("loss", 0.5, T0 + 1, 1),
            ("loss", 0.25, T0 + 2, 2),
            ("loss", 0.25, T0 + 2, 2),  # the same point twice
            ("loss", 0.3, T0 + 3, 1),  # a second value at step 1 (a PBT recipient)
            ("acc", math.nan, T0, 0),
            ("big", math.inf, T0, 0),
            ("big", -math.inf, T0 + 1, 1),
        ],
    )
    flusher.set_tags("t1", {STATUS_TAG: "FINISHED", "note": "y" * 9000})
    flusher.end_run("t1", "FINISHED")
    _add(flusher, "t2", lr="0.2")
    flusher.log_metrics("t2", [("loss", 2.0, T0, 0)])
    flusher.set_tags("t2", {STATUS_TAG: "ERROR", "sweeplab.error": "boom"})
    flusher.end_run("t2", "FAILED")
    _add(flusher, "t3", lr="0.3")
    flusher.log_metrics("t3", [("loss", 1.0, T0, 0), ("loss", 0.8, T0 + 1, 1)])
    _add(flusher, "t4", lr="0.4")
    flusher.log_metrics("t4", [("bad!key", 1.0, T0, 0)])
    flusher.end_run("t4", "FINISHED")


def _second_phase(flusher: Flusher) -> None:
    """The runs exist: more points (a later step first), rank tags, a new name, an end."""
    flusher.log_metrics("t3", [("loss", 0.4, T0 + 5, 5), ("loss", 0.6, T0 + 6, 4)])
    flusher.set_tags("t3", {RUN_NAME_TAG: "r1 t3", "sweeplab.rank": "1"})
    flusher.end_run("t3", "FINISHED")
    flusher.set_tags("t1", {RUN_NAME_TAG: "r2 t1", "sweeplab.rank": "2", "note": "z"})


def _run_both(uri: str, phases: list[Any]) -> tuple[list[Any], list[Any]]:
    """The same events through a bulk and a client flusher; what MLflow reads back of each."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    experiment_id = client.create_experiment("bulk")
    results = []
    for bulk in (True, False):
        flusher, counting, parent = _flusher(uri, experiment_id, bulk=bulk)
        flusher.start()
        for phase in phases:
            phase(flusher)
            assert flusher.drain(60)
        flusher.stop()
        results.append((_read_back(client, experiment_id, parent), counting.calls, flusher))
    return results[0], results[1]


def _read_back(client: Any, experiment_id: str, parent: str) -> dict[str, Any]:
    runs = client.search_runs(
        [experiment_id], filter_string=f"tags.`{PARENT_TAG}` = '{parent}'", max_results=100
    )
    read = {}
    for run in runs:
        info, data = run.info, run.data
        tags = {k: v for k, v in data.tags.items() if k != PARENT_TAG}
        histories = {
            key: sorted(
                (m.step, m.timestamp, "nan" if math.isnan(m.value) else m.value)
                for m in client.get_metric_history(info.run_id, key)
            )
            for key in data.metrics
        }
        latest = {k: "nan" if math.isnan(v) else v for k, v in data.metrics.items()}
        read[tags[TRIAL_ID_TAG]] = {
            "name": info.run_name,
            "status": info.status,
            "user": info.user_id,
            "stage": info.lifecycle_stage,
            "started": info.start_time is not None,
            "ended": info.end_time is not None,
            "artifacts": info.artifact_uri.replace(info.run_id, "<run>"),
            "tags": tags,
            "params": data.params,
            "latest": latest,
            "histories": histories,
        }
    return read


def test_bulk_writes_equal_mlflow_client_writes(sql_store_uri: str) -> None:
    (bulk_read, bulk_calls, bulk), (client_read, client_calls, _) = _run_both(
        sql_store_uri, [_first_phase, _second_phase]
    )
    assert bulk_read == client_read
    assert set(bulk_read) == {"t1", "t2", "t3", "t4"}
    t1 = bulk_read["t1"]
    assert t1["name"] == "r2 t1" and t1["tags"]["note"] == "z"
    assert t1["params"]["long"] == "x" * 6000
    assert t1["latest"] == {"loss": 0.25, "acc": "nan", "big": -1.7976931348623157e308}
    assert [p[0] for p in t1["histories"]["loss"]] == [0, 1, 1, 2]
    assert bulk_read["t3"]["latest"] == {"loss": 0.4}  # step 5 stays the latest
    assert bulk_read["t3"]["status"] == "FINISHED"
    assert bulk_read["t4"]["latest"] == {}  # MLflow rejected the point, in both
    # Only t4 (a name MLflow rejects) went through the client.
    assert bulk_calls.get("create_run") == 1
    assert client_calls["create_run"] == 4
    assert bulk.delivered_points == 7 + 1 + 4 + 1  # t1 sent one point twice
    # Delivered trials leave the flusher's waiting list (its work per event stays flat) and
    # keep their run ids.
    assert bulk._waiting == {} and set(bulk.run_ids()) == {"t1", "t2", "t3", "t4"}


@pytest.mark.parametrize(
    ("fault", "created_by_client"),
    [("before the commit", 4), ("after the commit", 1)],
)
def test_a_failed_bulk_write_is_written_once(
    sql_store_uri: str, monkeypatch: pytest.MonkeyPatch, fault: str, created_by_client: int
) -> None:
    """A batch that failed goes through the client; one whose commit's answer was lost (its
    runs are there) is not written again."""
    write = SqlBulk.write
    failures = iter([True])

    def failing(self: SqlBulk, runs: Any) -> None:
        if fault == "after the commit":
            write(self, runs)
        if next(failures, False):
            raise RuntimeError(f"the database went away {fault}")
        if fault == "before the commit":
            write(self, runs)

    monkeypatch.setattr(SqlBulk, "write", failing)
    (bulk_read, bulk_calls, _), (client_read, _, _) = _run_both(
        sql_store_uri, [_first_phase, _second_phase]
    )
    assert bulk_read == client_read
    assert bulk_calls["create_run"] == created_by_client


def test_no_bulk_writer_for_other_stores_or_when_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    uri = store_uri(tmp_path)
    experiment_id = MlflowClient(uri).create_experiment("bulk")
    assert isinstance(sql_bulk(uri, experiment_id), SqlBulk)
    assert sql_bulk(f"file://{tmp_path / 'mlruns'}", "0") is None
    assert sql_bulk("http://127.0.0.1:5000", "0") is None
    monkeypatch.setenv("SWEEPLAB_TRACKING_BULK", "0")
    assert sql_bulk(uri, experiment_id) is None
    monkeypatch.delenv("SWEEPLAB_TRACKING_BULK")

    def broken(uri: str) -> Any:
        raise RuntimeError("no store")

    monkeypatch.setattr(_bulk, "tracking_store", broken)
    assert sql_bulk(uri, experiment_id) is None


@pytest.mark.slow
@pytest.mark.parametrize("backend_store_uri", ["postgresql"], indirect=True)
def test_bulk_writes_into_a_servers_database(
    mlflow_server: MlflowServer, backend_store_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given the server's database, a sweep through the server writes its child runs there in
    bulk, and they read back through the server as runs the server itself created."""
    monkeypatch.setenv(DATABASE_ENV, backend_store_uri)
    (bulk_read, bulk_calls, _), (client_read, client_calls, _) = _run_both(
        mlflow_server.uri, [_first_phase, _second_phase]
    )
    assert bulk_read == client_read
    assert bulk_read["t1"]["artifacts"].startswith("mlflow-artifacts:/")
    assert bulk_calls.get("create_run") == 1 and client_calls["create_run"] == 4


@pytest.mark.slow
@pytest.mark.parametrize("backend_store_uri", ["postgresql"], indirect=True)
def test_a_database_that_is_not_the_servers_is_not_written(
    mlflow_server: MlflowServer,
    postgres: PostgresCluster,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(mlflow_server.uri)
    experiment_id = client.create_experiment("bulk")
    parent = client.create_run(experiment_id).info.run_id
    other = sqlalchemy_uri(postgres.create_database("not_the_servers"))
    MlflowClient(other).create_experiment("bulk")  # the same experiment id, another database
    empty = sqlalchemy_uri(postgres.create_database("empty"))
    cases = {
        other: "does not hold this sweep's parent run",
        empty: "cannot be read",
        "postgresql+psycopg://user:secret@127.0.0.1:1/none": "cannot be read",
        "http://127.0.0.1:1": "is not a database URI",
    }
    for database, expected in cases.items():
        monkeypatch.setenv(DATABASE_ENV, database)
        caplog.clear()
        assert sql_bulk(mlflow_server.uri, experiment_id, parent) is None
        (line,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert expected in line and "secret" not in line, line
        assert mlflow_server.uri in line
    assert _tables(empty) == []  # the check wrote nothing, not even MLflow's tables


def _tables(database: str) -> list[str]:
    import psycopg

    with psycopg.connect(libpq_uri(database)) as connection:
        rows = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
    return [row[0] for row in rows]


def test_a_password_is_not_shown() -> None:
    assert redacted("postgresql://me:pw@db:5432/mlflow") == "postgresql://me:***@db:5432/mlflow"
    assert redacted("sqlite:///mlflow.db") == "sqlite:///mlflow.db"
