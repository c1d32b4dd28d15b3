"""A SQLite store a sweep writes to is in write-ahead-log mode; other SQLite files are not."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from mlflow_store import store_uri

from sweeplab.tracking import SweepTracker, sqlite_store_path


class _Trial:
    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id
        self.config = {"x": 0.5}
        self.local_path = self.path = self.error_file = None


def _track_one_trial(uri: str, storage: Path) -> None:
    tracker = SweepTracker(
        tracking_uri=uri, sweep_name="wal", storage_dir=storage, metric="loss", mode="min",
        max_iterations=2, drain_timeout_s=60,
    )  # fmt: skip
    tracker.start()
    trial = _Trial("t1")
    tracker.trial_started(trial)
    for step in (1, 2):
        tracker.trial_reported(trial, {"loss": 1.0 / step, "training_iteration": step})
    tracker.trial_ended(trial)
    tracker.finish()


def _journal_mode(path: Path) -> str:
    with sqlite3.connect(path) as connection:
        return str(connection.execute("PRAGMA journal_mode").fetchone()[0])


def test_the_tracked_store_is_wal_and_another_sqlite_file_is_not(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    uri = store_uri(tmp_path / "store")
    other = tmp_path / "other.db"
    sqlite3.connect(other).close()
    _track_one_trial(uri, tmp_path / "sweep")
    assert _journal_mode(tmp_path / "store" / "mlflow.db") == "wal"
    # Everything the sweep wrote is read back, from a fresh client.
    (run,) = MlflowClient(uri).search_runs(
        [MlflowClient(uri).get_experiment_by_name("wal").experiment_id],
        filter_string="tags.`sweeplab.role` = 'trial'",
    )
    assert run.data.metrics["loss"] == 0.5
    # An SQLAlchemy engine of another SQLite file in this process keeps its journal.
    import sqlalchemy

    engine = sqlalchemy.create_engine(f"sqlite:///{other}")
    with engine.connect() as connection:
        connection.execute(sqlalchemy.text("CREATE TABLE t (a INTEGER)"))
        connection.commit()
    engine.dispose()
    assert _journal_mode(other) == "delete"


def test_turned_off_the_store_keeps_mlflows_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWEEPLAB_SQLITE_WAL", "0")
    uri = store_uri(tmp_path / "store")
    _track_one_trial(uri, tmp_path / "sweep")
    assert _journal_mode(tmp_path / "store" / "mlflow.db") == "delete"


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("sqlite:////abs/mlflow.db", "/abs/mlflow.db"),
        ("sqlite:///rel.db", os.path.realpath("rel.db")),
        ("sqlite:////abs/mlflow.db?timeout=30", "/abs/mlflow.db"),
        ("sqlite:///:memory:", None),
        ("sqlite://", None),
        ("postgresql://u@localhost/db", None),
        ("http://127.0.0.1:5000", None),
    ],
)
def test_sqlite_store_path(uri: str, expected: str | None) -> None:
    assert sqlite_store_path(uri) == expected
