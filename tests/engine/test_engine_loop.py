"""`sweeplab sweep`: the sweep run by sweeplab's own trial loop, end to end.

A real local Ray and a real MLflow SQLite store. The loop must record a parent run and a child
run per trial with its points and status, and keep the faults the engine survives: a training
function that fails once (retried from its checkpoint), one that always fails, one that returns
early, one whose process is SIGKILLed (a fresh slot, retried), and one that diverges.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow_store import store_uri

from sweeplab.engine import SweepOptions, run_sweep
from sweeplab.spec import load_spec

pytestmark = pytest.mark.slow

ENV = {**os.environ, "COLUMNS": "160"}


def child_runs(uri: str, name: str) -> list[Any]:
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name(name)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("sweeplab.role") != "trial"]
    assert len(parents) == 1, [r.data.tags for r in parents]
    assert parents[0].info.status == "FINISHED"
    return [r for r in runs if r.data.tags.get("sweeplab.role") == "trial"]


def trials_of(uri: str, name: str) -> list[tuple[str, int, str]]:
    """(config, points of the metric, status) of each child run, sorted."""
    client = mlflow.MlflowClient(uri)
    rows = []
    for run in child_runs(uri, name):
        points = client.get_metric_history(run.info.run_id, "loss")
        steps = [p.step for p in points]
        assert steps == sorted(set(steps)), f"a step logged twice: {steps}"
        config = json.dumps(
            {k: float(v) for k, v in sorted(run.data.params.items())}, sort_keys=True
        )
        rows.append((config, len(points), run.data.tags["sweeplab.status"]))
    return sorted(rows)


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


STUCK = """
import time

import ray.train

import sweeplab
from sweeplab import uniform


def train_func(config):
    ray.train.report({"loss": config["x"]})
    time.sleep(3600)  # never reports again, never ends


sweep = sweeplab.Sweep(
    train_func=train_func, name="stuck", space={"x": uniform(0, 1)}, metric="loss",
    mode="min", num_trials=1, max_iterations=5,
)
"""


@pytest.mark.timeout(300)
def test_the_stall_watchdog_watches_a_loop_sweep(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import re
    import time

    from sweeplab.cli import main

    spec = in_tmp / "stuck.py"
    spec.write_text(STUCK)
    started = time.monotonic()
    code = main(
        ["sweep", str(spec), "--no-live", "--storage", str(in_tmp / "runs"),
         "--tracking-uri", f"sqlite:///{in_tmp / 'mlflow.db'}", "--stall-timeout", "6",
         "--fail-on-stall"]
    )  # fmt: skip
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 1, err
    assert elapsed < 60, f"the stalled sweep took {elapsed:.0f}s to fail"
    lines = [line for line in err.splitlines() if line.startswith("sweeplab: sweep stalled:")]
    assert len(lines) == 1, err
    match = re.search(r"waiting for (\S+) RUNNING at iteration 1, last report \d+s ago;", lines[0])
    assert match, lines[0]
    (report,) = (in_tmp / "runs" / "stuck").glob("run-*/stall.txt")
    assert match.group(1) in report.read_text()


@pytest.mark.timeout(900)
def test_a_killed_loop_sweep_resumes_from_its_snapshot(in_tmp: Path) -> None:
    from test_engine_resume import _stop_orphans, kill_when
    from toy_spec import write_spec

    spec = write_spec(
        in_tmp,
        'name="killed", space={"x": uniform(0, 1)}, metric="loss", mode="min", '
        'searcher="optuna", scheduler="fifo", num_trials=6, max_iterations=6, seed=0',
        epochs=6,
        sleep=0.4,
    )  # two one-worker slots on the 2 CPUs: three rounds of two trials
    uri = store_uri(in_tmp)
    command = [sys.executable, "-m", "sweeplab.cli", "sweep", str(spec), "--no-live",
               "--tracking-uri", uri]  # fmt: skip
    driver = subprocess.Popen(
        command, cwd=in_tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip

    def ended() -> list[str]:
        """The trials whose six reports are on disk."""
        results = in_tmp.glob("sweeplab-runs/killed/run-*/trials/*/result.json")
        return [p.parent.name for p in results if len(p.read_text().splitlines()) >= 6]

    def snapshot() -> bool:
        return bool(list(in_tmp.glob("sweeplab-runs/killed/run-*/loop_state.pkl")))

    # Killed once some trials have ended and a snapshot is on disk, before the sweep ends.
    kill_when(driver, lambda: len(ended()) >= 2 and snapshot(), "the sweep never ended a trial")
    done = ended()
    assert len(done) < 6, "the sweep had finished before the kill: nothing left to resume"
    _stop_orphans(driver.pid)

    resumed = subprocess.run(
        [*command, "--resume"], cwd=in_tmp, capture_output=True, text=True, timeout=600
    )
    _stop_orphans(driver.pid)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "killed: 6 trials in" in resumed.stdout

    client = mlflow.MlflowClient(uri)
    children = child_runs(uri, "killed")  # one parent run, continued
    trial_ids = [r.data.tags["sweeplab.trial_id"] for r in children]
    assert len(trial_ids) == len(set(trial_ids)) == 6, "one child run per trial, 6 trials"
    statuses = [(r.info.status, r.data.tags["sweeplab.status"]) for r in children]
    assert set(statuses) == {("FINISHED", "finished")}, (statuses, resumed.stdout[-3000:])
    for run in children:
        steps = sorted(m.step for m in client.get_metric_history(run.info.run_id, "loss"))
        assert steps == list(range(1, 7)), f"{run.data.tags['sweeplab.trial_id']}: {steps}"
    (trials,) = in_tmp.glob("sweeplab-runs/killed/run-*/trials")
    for trial_id in done:
        # A trial that had ended before the kill did not run again (one run folder).
        assert len(list(trials.glob(f"{trial_id}_*"))) == 1, trial_id
