"""A new SQLite store is a copy of an empty store MLflow made once, and reads as MLflow's own."""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from sweeplab.tracking import TEMPLATE_ENV, SweepTracker
from sweeplab.tracking._new_store import seed_sqlite_store, store_template


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own, so that the template is built here."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    return folder / "sweeplab"


def _schema(path: Path) -> list[tuple[str, list[str]]]:
    """Each table's and index's definition, as its sorted clauses.

    MLflow's own migrations do not write a table's constraints in the same order each time.
    """
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
    return sorted(
        (name, sorted(clause.strip() for line in sql.splitlines() for clause in line.split(",")))
        for name, sql in rows
    )


def _rows(path: Path, table: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as db:
        return db.execute(f"SELECT * FROM {table}").fetchall()


def _track_one_trial(uri: str, storage: Path) -> None:
    class Trial:
        def __init__(self) -> None:
            self.trial_id = "t1"
            self.config = {"x": 0.5}
            self.local_path = self.path = self.error_file = None

    tracker = SweepTracker(
        tracking_uri=uri, sweep_name="seeded", storage_dir=storage, metric="loss", mode="min",
        max_iterations=2, drain_timeout_s=60,
    )  # fmt: skip
    tracker.start()
    trial = Trial()
    tracker.trial_started(trial)
    for step in (1, 2):
        tracker.trial_reported(trial, {"loss": 1.0 / step, "training_iteration": step})
    tracker.trial_ended(trial)
    tracker.finish()


def test_a_sweep_into_a_new_store_copies_the_template_and_reads_as_mlflows_own(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)
    (tmp_path / "seeded").mkdir()
    (tmp_path / "plain").mkdir()
    seeded, plain = tmp_path / "seeded" / "mlflow.db", tmp_path / "plain" / "mlflow.db"
    _track_one_trial(f"sqlite:///{seeded}", tmp_path / "sweep")
    (template,) = cache.glob("mlflow-*-empty.db")
    assert _rows(template, "experiments") == []
    # The same store as MLflow makes it, by its migrations.
    MlflowClient(f"sqlite:///{plain}").search_experiments()
    assert _schema(seeded) == _schema(plain)
    assert _rows(seeded, "alembic_version") == _rows(plain, "alembic_version")
    assert _rows(seeded, "workspaces") == _rows(plain, "workspaces")
    # MLflow added the Default experiment when it opened the copy, under the copy's own
    # artifact root, as it did for its own store.
    default = MlflowClient(f"sqlite:///{seeded}").get_experiment("0")
    assert default.name == "Default"
    assert default.artifact_location == MlflowClient(f"sqlite:///{plain}").get_experiment(
        "0"
    ).artifact_location.replace(str(tmp_path / "plain"), str(tmp_path / "seeded"))
    # And the sweep's records are there.
    client = MlflowClient(f"sqlite:///{seeded}")
    (run,) = client.search_runs(
        [client.get_experiment_by_name("seeded").experiment_id],
        filter_string="tags.`sweeplab.role` = 'trial'",
    )
    assert run.data.metrics["loss"] == 0.5


def test_the_template_is_built_once_and_an_existing_store_is_left_alone(
    cache: Path, tmp_path: Path
) -> None:
    assert seed_sqlite_store(f"sqlite:///{tmp_path / 'a.db'}")
    template = store_template()
    assert template is not None
    built = template.stat().st_mtime_ns
    assert seed_sqlite_store(f"sqlite:///{tmp_path / 'b.db'}")
    assert template.stat().st_mtime_ns == built
    assert (tmp_path / "a.db").read_bytes() == template.read_bytes()
    # An existing file (even an empty one) is never replaced.
    (tmp_path / "c.db").write_bytes(b"")
    assert not seed_sqlite_store(f"sqlite:///{tmp_path / 'c.db'}")
    assert (tmp_path / "c.db").read_bytes() == b""
    # A missing folder is created, as MLflow does; nothing is done for another kind of store.
    assert seed_sqlite_store(f"sqlite:///{tmp_path / 'new' / 'd.db'}")
    assert not seed_sqlite_store("http://127.0.0.1:5000")
    assert not seed_sqlite_store("sqlite:///:memory:")
    # No copy is left behind beside the stores.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "b.db", "c.db", "cache", "new"]
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["d.db"]


def test_of_several_creators_of_one_store_exactly_one_copies_it(
    cache: Path, tmp_path: Path
) -> None:
    assert store_template() is not None
    target = f"sqlite:///{tmp_path / 'mlflow.db'}"
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def create() -> None:
        barrier.wait()
        results.append(seed_sqlite_store(target))

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 7 + [True]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "mlflow.db"]


def test_without_a_template_mlflow_creates_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    # A cache "folder" that is a file: no template can be built.
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))
    assert store_template() is None
    assert not seed_sqlite_store(f"sqlite:///{tmp_path / 'a.db'}")
    # Turned off: nothing is copied even with a template at hand.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(TEMPLATE_ENV, "0")
    assert not seed_sqlite_store(f"sqlite:///{tmp_path / 'a.db'}")
    assert not (tmp_path / "cache").exists()
    assert not (tmp_path / "a.db").exists()
    uri = f"sqlite:///{tmp_path / 'a.db'}"
    assert MlflowClient(uri).get_experiment("0").name == "Default"
    assert os.path.getsize(tmp_path / "a.db") > 0


def test_the_tracker_writes_to_the_store_opened_in_the_background(
    cache: Path, tmp_path: Path
) -> None:
    from mlflow import MlflowClient

    from sweeplab.tracking import open_store_in_background

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    opening = open_store_in_background(uri)
    _track_one_trial(uri, tmp_path / "sweep")
    assert not opening.is_alive()
    assert list(cache.glob("mlflow-*-empty.db"))
    client = MlflowClient(uri)
    (run,) = client.search_runs(
        [client.get_experiment_by_name("seeded").experiment_id],
        filter_string="tags.`sweeplab.role` = 'trial'",
    )
    assert run.data.metrics["loss"] == 0.5


def test_a_store_that_cannot_be_opened_is_reported_by_the_tracker_not_the_thread(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweeplab.tracking import TrackingError, open_store_in_background

    uncaught: list[object] = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    # Its folder would be a file: neither the copy nor MLflow can create it.
    (tmp_path / "a-file").write_text("")
    uri = f"sqlite:///{tmp_path / 'a-file' / 'mlflow.db'}"
    open_store_in_background(uri).join()
    assert uncaught == []
    with pytest.raises(TrackingError, match="a-file"):
        _track_one_trial(uri, tmp_path / "sweep")
