"""Ended trials leave Tune's controller while a stop-only sweep runs, and nothing is lost.

`raycompat.ended_trials_released` lets Tune's controller drop each trial that ended, keeping its
snapshot entry compressed. The sweep's count, its ranking, MLflow's runs and Tune's own snapshot
(which `--resume` restores from) must still hold every trial.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sweeplab import raycompat
from sweeplab.engine import SweepOptions, run_sweep
from sweeplab.spec import load_spec

pytestmark = pytest.mark.slow

TRIALS = 16

SPEC = """
import time
from pathlib import Path

import ray.train

import sweeplab
from sweeplab import uniform


def train_func(config):
    first = Path({folder!r}, "first")
    if not first.exists():
        first.touch()
        raise RuntimeError("the first trial fails: an errored trial is not released")
    for step in range(3):
        time.sleep(0.01)
        ray.train.report({{"loss": config["x"] + 1.0 / (step + 1)}})


sweep = sweeplab.Sweep(
    name="released", train_func=train_func, space={{"x": uniform(0, 1)}}, metric="loss",
    mode="min", scheduler="asha", num_trials={trials}, max_iterations=3, seed=0,
)
"""


def _run(folder: Path, *, track: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Runs the sweep; its outcome, checked to count every trial after most were released."""
    released: list[int] = []
    release_from = raycompat.ReleasedTrials.release_from

    def counting(self: raycompat.ReleasedTrials, controller: Any) -> None:
        release_from(self, controller)
        released.append(len(self))

    monkeypatch.setattr(raycompat.ReleasedTrials, "release_from", counting)
    spec = folder / "spec.py"
    spec.write_text(SPEC.format(folder=str(folder), trials=TRIALS))
    options = SweepOptions(
        spec_path=spec,
        storage=folder / "runs",
        tracking_uri=f"sqlite:///{folder / 'mlflow.db'}",
        live=False,
        track=track,
        engine="tune",
    )
    outcome = run_sweep(load_spec(spec), options)
    assert max(released, default=0) >= TRIALS - 2, f"ended trials were not released: {released}"
    assert outcome.trials == TRIALS and outcome.errored == 1
    return outcome


def _snapshot_trials(run_dir: Path) -> list[dict[str, Any]]:
    """The trials of Tune's last experiment snapshot, read with Tune's own reader."""
    from ray.tune import ExperimentAnalysis

    (state,) = (run_dir / "tune").glob("experiment_state-*.json")
    entries = json.loads(state.read_text())["trial_data"]
    analysis = ExperimentAnalysis(str(run_dir / "tune"))
    assert len(analysis.trials) == len(entries)
    return [
        {
            "status": t.status,
            "config": t.config,
            "path": t.path,
            "iterations": (t.last_result or {}).get("training_iteration"),
        }
        for t in analysis.trials
    ]


def test_an_untracked_sweep_counts_and_ranks_its_released_trials(
    ray_local: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = _run(tmp_path, track=False, monkeypatch=monkeypatch)
    assert len(outcome.summary.trials) == TRIALS
    statuses = sorted(trial.status for trial in outcome.summary.trials)
    assert statuses.count("errored") == 1, statuses
    ranked = [t for t in outcome.summary.trials if t.status != "errored"]
    assert all(t.iterations >= 1 and t.config.get("x") is not None for t in ranked)
    best = min(ranked, key=lambda t: t.best_value)
    assert outcome.best is not None and outcome.best["config"] == best.config
    snapshot = _snapshot_trials(outcome.storage_dir)
    assert len(snapshot) == TRIALS
    assert sorted(t["status"] for t in snapshot) == ["ERROR"] + ["TERMINATED"] * (TRIALS - 1)
    assert {t["config"]["x"] for t in snapshot} == {t.config["x"] for t in outcome.summary.trials}
    # The released trials' files moved from Tune's staging folder to the run folder, complete:
    # each trial's result.json there has a line for every result Tune recorded.
    for trial in snapshot:
        if trial["status"] == "TERMINATED":
            lines = (Path(trial["path"]) / "result.json").read_text().splitlines()
            assert len(lines) == trial["iterations"] >= 1, trial


def test_a_tracked_sweep_records_every_released_trial(
    ray_local: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow

    outcome = _run(tmp_path, track=True, monkeypatch=monkeypatch)
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("released")
    runs = client.search_runs([experiment.experiment_id])
    children = [r for r in runs if r.data.tags.get("sweeplab.role") == "trial"]
    assert len(children) == TRIALS
    assert sum(1 for r in children if r.info.status == "FINISHED") == TRIALS - 1
    assert len(_snapshot_trials(outcome.storage_dir)) == TRIALS
