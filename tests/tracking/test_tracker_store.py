"""The tracker against a real SQLite MLflow store, fed trial events directly (no Ray)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mlflow_store import store_uri

from sweeplab.tracking import SweepTracker, best_config_document, rank_tune_results

KIND_TAG = "mlflow.experimentKind"


class _Trial:
    """The attributes of a Tune trial the tracker reads."""

    def __init__(self, trial_id: str, x: float) -> None:
        self.trial_id = trial_id
        self.config = {"x": x}
        self.local_path = self.path = self.error_file = None


def _tracker(uri: str, storage: Path, name: str = "store", resume: bool = False) -> SweepTracker:
    return SweepTracker(
        tracking_uri=uri, sweep_name=name, storage_dir=storage, metric="loss", mode="min",
        max_iterations=3, resume=resume, drain_timeout_s=60,
    )  # fmt: skip


def _run(tracker: SweepTracker, losses: dict[str, list[Any]]) -> None:
    tracker.start()
    for n, (trial_id, values) in enumerate(losses.items()):
        trial = _Trial(trial_id, float(n))
        tracker.trial_started(trial)
        for step, value in enumerate(values, start=1):
            tracker.trial_reported(trial, {"loss": value, "training_iteration": step})
        tracker.trial_ended(trial)


@pytest.fixture
def uri(tmp_path: Path) -> str:
    return store_uri(tmp_path)


def test_numpy_metrics_reach_mlflow(uri: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    tracker = _tracker(uri, tmp_path / "s")
    _run(tracker, {"t_a": [np.float32(0.5), np.float64(0.25), np.int64(1)]})
    summary = tracker.finish()

    (record,) = summary.trials
    history = MlflowClient(uri).get_metric_history(record.run_id, "loss")
    assert sorted((m.step, m.value) for m in history) == [(1, 0.5), (2, 0.25), (3, 1.0)]
    assert record.best_value == 0.25 and record.best_iteration == 2


def test_experiment_opens_on_training_runs_and_runs_sort_by_rank(uri: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    # An experiment that exists before sweeplab sees it (an older sweeplab, or by hand).
    client.create_experiment("store")
    tracker = _tracker(uri, tmp_path / "s")
    losses = {f"t_{i:02d}": [0.1 * (12 - i)] for i in range(11)}
    losses["t_none"] = []
    _run(tracker, losses)
    summary = tracker.finish()

    experiment = client.get_experiment_by_name("store")
    assert experiment.tags[KIND_TAG] == "custom_model_development"
    runs = client.search_runs(
        [experiment.experiment_id],
        filter_string="tags.`sweeplab.role` = 'trial'",
        order_by=["attributes.run_name ASC"],
    )
    assert [r.data.tags["sweeplab.trial_id"] for r in runs] == [r.trial_id for r in summary.trials]
    names = [r.info.run_name for r in runs]
    assert names[0] == "r01 t_10 loss=0.2" and names[9] == "r10 t_01 loss=1.1"
    assert names[-1] == "r12 t_none loss=-"
    assert [r.data.tags["sweeplab.rank"] for r in runs] == [f"{i:02d}" for i in range(1, 13)]

    # a second sweep of the same name, and a resumed one, keep the tag
    client.delete_experiment_tag(experiment.experiment_id, KIND_TAG)
    second = _tracker(uri, tmp_path / "s2")
    _run(second, {"t_b": [1.0]})
    second.finish()
    assert client.get_experiment_by_name("store").tags[KIND_TAG] == "custom_model_development"
    client.delete_experiment_tag(experiment.experiment_id, KIND_TAG)
    resumed = _tracker(uri, tmp_path / "s2", resume=True)
    _run(resumed, {"t_b": [1.0, 0.5]})
    resumed.finish()
    assert client.get_experiment_by_name("store").tags[KIND_TAG] == "custom_model_development"
    (run,) = client.search_runs(
        [experiment.experiment_id], filter_string="tags.`sweeplab.trial_id` = 't_b'"
        " and tags.`mlflow.parentRunId` = '" + resumed.parent_run_id + "'"
    )  # fmt: skip
    assert run.info.run_name == "r01 t_b loss=0.5"


def test_best_config_file_is_the_rankings_best(uri: str, tmp_path: Path) -> None:
    tracker = _tracker(uri, tmp_path / "s", name="best")
    _run(tracker, {"t_a": [0.5, 0.4], "t_b": [0.3, 0.6]})
    summary = tracker.finish()

    written = json.loads((tmp_path / "s" / "best_config.json").read_text())
    assert written == best_config_document(summary, "best")
    assert list(written) == [
        "sweep", "trial_id", "metric", "mode", "rank_by", "value", "config", "checkpoint",
        "mlflow_run_id", "parent_run_id", "tracking_uri", "trials", "diverged",
    ]  # fmt: skip
    assert written["trial_id"] == "t_b" and written["value"] == 0.3
    assert written["config"] == {"x": 1.0} and written["tracking_uri"] == uri


class _Result:
    """The attributes of a ``ray.tune.Result`` that the untracked ranking reads."""

    def __init__(self, path: Path, config: dict, rows: list[dict], error: Exception | None = None):
        path.mkdir(parents=True)
        (path / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
        self.path, self.config, self.error = str(path), config, error
        self.metrics = rows[-1] if rows else {}


def test_untracked_ranking_matches_the_tracked_one(uri: str, tmp_path: Path) -> None:
    losses = {"t_a": [0.5, 0.4], "t_b": [0.3, 0.6], "t_c": []}
    tracker = _tracker(uri, tmp_path / "s", name="same")
    _run(tracker, losses)
    tracked = tracker.finish()

    results = [
        _Result(
            tmp_path / "tune" / trial_id,
            {"x": float(n)},
            [
                {"trial_id": trial_id, "training_iteration": step, "loss": value}
                for step, value in enumerate(values, start=1)
            ],
            error=RuntimeError("boom") if not values else None,
        )
        for n, (trial_id, values) in enumerate(losses.items())
    ]
    untracked = rank_tune_results(results, metric="loss", mode="min", max_iterations=3)

    def strip(doc: dict) -> dict:
        return {k: v for k, v in doc.items() if k not in ("mlflow_run_id", "parent_run_id",
                                                          "tracking_uri")}  # fmt: skip

    assert [r.trial_id for r in untracked.trials] == [r.trial_id for r in tracked.trials]
    assert [r.config for r in untracked.trials] == [r.config for r in tracked.trials]
    assert untracked.trials[-1].status == "errored"
    doc = best_config_document(untracked, "same")
    assert strip(doc) == strip(best_config_document(tracked, "same"))
    assert doc["parent_run_id"] is None and doc["tracking_uri"] is None


def test_only_the_best_runs_are_renamed_and_every_rank_sorts_as_text(
    uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    import sweeplab.tracking._trials as trials

    monkeypatch.setattr(trials, "NAMED_RUNS", 3)
    tracker = _tracker(uri, tmp_path / "s")
    _run(tracker, {f"t_{i:02d}": [0.1 * (12 - i)] for i in range(12)})
    tracker.finish()
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("store")
    runs = client.search_runs(
        [experiment.experiment_id], order_by=["tags.`sweeplab.rank` ASC"]
    )  # the MLflow UI's order (sweeplab ui): by the rank tag as text, the parent run last
    names = [r.info.run_name for r in runs]
    assert names[:3] == ["r01 t_11 loss=0.1", "r02 t_10 loss=0.2", "r03 t_09 loss=0.3"]
    assert names[3:12] == [f"t_{i:02d}" for i in range(8, -1, -1)]
    assert [r.data.tags.get("sweeplab.rank") for r in runs] == [
        f"{i:02d}" for i in range(1, 13)
    ] + [None]
