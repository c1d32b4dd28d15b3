"""Resuming a sweep after its driver died reuses the same runs and loses no metric point."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from _helpers import N_ITER, children, make_trainable, tune_results
from mlflow_store import store_uri

from sweeplab.tracking import SweepTracker

pytestmark = pytest.mark.slow


def _tracker(uri: str, storage: Path, resume: bool) -> SweepTracker:
    return SweepTracker(
        tracking_uri=uri, sweep_name="resumable", storage_dir=storage, metric="loss",
        mode="min", max_iterations=N_ITER, resume=resume,
    )  # fmt: skip


def _mlflow_points(client: Any, runs: list[Any]) -> dict[str, list[int]]:
    return {
        r.data.tags["sweeplab.trial_id"]: [
            m.step for m in client.get_metric_history(r.info.run_id, "loss")
        ]
        for r in runs
    }


def test_resume_reuses_runs_and_backfills(ray_local: None, in_tmp: Path) -> None:
    from mlflow import MlflowClient
    from ray import tune

    uri = store_uri(in_tmp)
    storage = in_tmp / "sweep"
    trainable = make_trainable(in_tmp / "ckpt", sleep_s=0.15)
    first = _tracker(uri, storage, resume=False)
    first.start()

    class KillDriver(tune.Callback):
        """Loses the tracker's queue after 3 results and interrupts Tune after 6."""

        def __init__(self, tracker: SweepTracker) -> None:
            self.tracker: SweepTracker | None = tracker
            self.seen = 0

        def __getstate__(self) -> dict:  # Tune pickles its callbacks
            return {"tracker": None, "seen": 0}

        def on_trial_result(self, iteration, trials, trial, result, **info):  # type: ignore[no-untyped-def]
            self.seen += 1
            if self.seen == 3 and self.tracker is not None:
                assert self.tracker._flusher is not None
                self.tracker._flusher.abandon()
            if self.seen == 6 and self.tracker is not None:
                os.kill(os.getpid(), signal.SIGINT)

    tuner = tune.Tuner(
        trainable,
        param_space={"x": tune.grid_search([0, 1, 2, 3])},
        tune_config=tune.TuneConfig(metric="loss", mode="min"),
        run_config=tune.RunConfig(
            name="resumable", storage_path=str(in_tmp / "ray"), verbose=0,
            callbacks=[first.tune_callback(), KillDriver(first)],
        ),
    )  # fmt: skip
    tuner.fit()
    experiment_path = str(in_tmp / "ray" / "resumable")
    trial_dirs = [p for p in Path(experiment_path).iterdir() if (p / "result.json").exists()]
    tune_before = sum(len(tune_results(p)) for p in trial_dirs)

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("resumable")
    assert experiment is not None
    parent_id = first.parent_run_id
    assert parent_id is not None
    before = _mlflow_points(client, children(client, parent_id, experiment.experiment_id))
    assert sum(len(steps) for steps in before.values()) < tune_before  # the kill lost points

    second = _tracker(uri, storage, resume=True)
    second.start()
    assert second.parent_run_id == parent_id
    restored = tune.Tuner.restore(experiment_path, trainable, resume_unfinished=True)
    # The pickled RunConfig carries an inert copy of the old callback; hand Tune the new one.
    restored._local_tuner.get_run_config().callbacks = [second.tune_callback()]
    grid = restored.fit()
    summary = second.finish()

    parents = client.search_runs(
        [experiment.experiment_id], filter_string="tags.`sweeplab.role` = 'sweep'"
    )
    assert [p.info.run_id for p in parents] == [parent_id]
    assert parents[0].info.status == "FINISHED"
    runs = children(client, parent_id, experiment.experiment_id)
    trial_ids = [r.data.tags["sweeplab.trial_id"] for r in runs]
    assert len(trial_ids) == len(set(trial_ids)) == 4
    after = _mlflow_points(client, runs)
    for result in grid:
        trial_id = result.metrics["trial_id"]
        tune_steps = {row["training_iteration"] for row in tune_results(result.path)}
        assert sorted(after[trial_id]) == sorted(tune_steps) == list(range(1, N_ITER + 1))
        assert set(before.get(trial_id, [])) <= set(after[trial_id])
    assert {r.data.tags["sweeplab.status"] for r in runs} == {"finished"}
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert sorted(int(r.data.tags["sweeplab.rank"]) for r in runs) == [1, 2, 3, 4]
    assert summary.best is not None and summary.best.best_value == pytest.approx(1 / (N_ITER - 1))
