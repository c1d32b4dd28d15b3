"""`sweeplab sweep`: the sweep run by sweeplab's own trial loop, end to end.

A real local Ray and a real MLflow SQLite store. The loop must record a parent run and a child
run per trial with its points and status, and keep the faults the engine survives: a training
function that fails once (retried from its checkpoint), one that always fails, one that returns
early, one whose process is SIGKILLed (a fresh slot, retried), and one that diverges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow_store import store_uri

from sweeplab.engine import SweepOptions, run_sweep
from sweeplab.spec import load_spec

pytestmark = pytest.mark.slow


def child_runs(uri: str, name: str) -> list[Any]:
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name(name)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("sweeplab.role") != "trial"]
    assert len(parents) == 1, [r.data.tags for r in parents]
    assert parents[0].info.status == "FINISHED"
    return [r for r in runs if r.data.tags.get("sweeplab.role") == "trial"]


FAULTS = """
import math
import os
import tempfile
from pathlib import Path

from ray import train

import sweeplab
from sweeplab import grid

FOLDER = Path({folder!r})


def train_func(config):
    case = config["case"]
    start = 1
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            start = int((Path(folder) / "iteration").read_text()) + 1
    for iteration in range(start, 7):
        mark = FOLDER / f"{{case}}-failed"
        if case == "returns after 4" and iteration == 5:
            return
        if iteration == 3 and case in ("fails once", "killed once") and not mark.exists():
            mark.write_text("failed")
            if case == "killed once":
                os.kill(os.getpid(), 9)
            raise RuntimeError(f"{{case}}: a failure at iteration 3")
        if iteration == 3 and case == "fails always":
            raise RuntimeError("fails always: a failure at iteration 3")
        loss = math.nan if case == "diverges" and iteration == 2 else 1 / iteration
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "iteration").write_text(str(iteration))
            train.report(
                {{"loss": loss, "iteration": iteration}},
                checkpoint=train.Checkpoint.from_directory(folder),
            )


CASES = ["fails once", "killed once", "fails always", "returns after 4", "diverges", "plain"]

sweep = sweeplab.Sweep(
    name="faults",
    train_func=train_func,
    space={{"case": grid(CASES)}},
    metric="loss",
    mode="min",
    searcher="grid",
    scheduler="fifo",
    num_trials=1,
    max_iterations=6,
    max_failures=1,
)
"""

EXPECTED = {
    # case: (status, iterations, restarts)
    "fails once": ("finished", 6, 1),
    "killed once": ("finished", 6, 1),
    "fails always": ("errored", 2, 1),
    "returns after 4": ("finished", 4, 0),
    "diverges": ("diverged", 2, 0),
    "plain": ("finished", 6, 0),
}


def test_faults_on_the_loop_engine_lose_nothing(in_tmp: Path) -> None:
    spec = in_tmp / "faults.py"
    spec.write_text(FAULTS.format(folder=str(in_tmp)))
    uri = store_uri(in_tmp)
    options = SweepOptions(spec_path=spec, storage=in_tmp / "runs", tracking_uri=uri, live=False)
    outcome = run_sweep(load_spec(spec), options)

    assert outcome.trials == 6
    assert outcome.errored == 1
    assert outcome.diverged == 1
    got = {
        record.config["case"]: (record.status, record.iterations, record.restarts)
        for record in outcome.summary.trials
    }
    assert got == EXPECTED
    client = mlflow.MlflowClient(uri)
    for run in child_runs(uri, "faults"):
        case = run.data.params["case"]
        steps = [p.step for p in client.get_metric_history(run.info.run_id, "iteration")]
        # Every iteration once, in order: a retry went on from the checkpoint.
        assert steps == list(range(1, EXPECTED[case][1] + 1)), (case, steps)
        assert run.data.tags["sweeplab.status"] == EXPECTED[case][0]
    error_file = next(outcome.storage_dir.glob("trials/*/error.txt"))
    assert "fails always: a failure at iteration 3" in error_file.read_text()


def test_the_time_budget_ends_a_loop_sweep(in_tmp: Path) -> None:
    spec = in_tmp / "budget.py"
    spec.write_text(
        "import time\nimport ray.train\nimport sweeplab\nfrom sweeplab import uniform\n\n"
        "def train_func(config):\n"
        "    for step in range(100):\n"
        "        time.sleep(0.1)\n"
        "        ray.train.report({'loss': config['x'] / (step + 1)})\n\n"
        "sweep = sweeplab.Sweep(name='budget', train_func=train_func,\n"
        "    space={'x': uniform(0, 1)}, metric='loss', mode='min', searcher='random',\n"
        "    scheduler='fifo', num_trials=50, max_iterations=100, time_budget_s=4)\n"
    )
    options = SweepOptions(spec_path=spec, storage=in_tmp / "runs", live=False, track=False)
    outcome = run_sweep(load_spec(spec), options)
    # 50 trials of 10 s each would take minutes; the budget ends the sweep after 4 s.
    assert outcome.wall_s < 30
    assert 0 < outcome.trials < 50
    assert all(record.iterations < 100 for record in outcome.summary.trials)
    assert outcome.best is not None


def test_a_trial_that_reports_through_tune_report_is_said(in_tmp: Path) -> None:
    """`ray.tune.report` is a no-op outside Tune's controller: the loop's trials finish with no
    report, and the sweep says so in one warning instead of ranking nothing in silence."""
    spec = in_tmp / "tune_report.py"
    spec.write_text(
        "from ray import tune\nimport sweeplab\nfrom sweeplab import uniform\n\n"
        "def train_func(config):\n"
        "    for step in range(3):\n"
        "        tune.report({'loss': config['x'] + step})\n\n"
        "sweep = sweeplab.Sweep(name='tune-report', train_func=train_func,\n"
        "    space={'x': uniform(0, 1)}, metric='loss', mode='min', num_trials=2,\n"
        "    max_iterations=3)\n"
    )
    options = SweepOptions(spec_path=spec, storage=in_tmp / "runs", live=False, track=False)
    outcome = run_sweep(load_spec(spec), options)
    assert outcome.errored == 0 and outcome.best is not None
    assert outcome.best["trial_id"] is None, "a trial without a report was picked"
    (warning,) = [w for w in outcome.warnings if "without a report" in w]
    assert warning.startswith("2 of 2 trial(s) finished without a report")
    assert "`ray.train.report`" in warning and "`ray.tune.report` reaches only" in warning
