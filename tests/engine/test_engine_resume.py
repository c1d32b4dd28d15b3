"""`--resume` after the sweep driver is killed with SIGKILL: the trial loop's snapshot, its
Optuna searcher's state and the 2-worker slot's trials go on, and MLflow holds each run once."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mlflow_store import store_uri
from toy_spec import write_spec

pytestmark = pytest.mark.slow


@pytest.mark.timeout(1200)  # its own limits add up to 870 s: reports 240, kill 30, resume 600
def test_resume_after_sigkill_finishes_the_sweep(in_tmp: Path) -> None:
    import mlflow

    spec = write_spec(
        in_tmp,
        'name="killed", space={"x": uniform(0, 1)}, metric="loss", mode="min", '
        'searcher="optuna", scheduler="fifo", '  # every trial runs to the end, resumed or not
        "num_trials=4, max_iterations=8, workers_per_trial=2, cpus_per_worker=1, seed=0",
        epochs=8,
        sleep=0.25,
    )  # one warm slot of 2 workers on the 2 CPUs: trials run one after another
    uri = store_uri(in_tmp)
    command = [
        sys.executable,
        "-m",
        "sweeplab.cli",
        "sweep",
        str(spec),
        "--no-live",
        "--tracking-uri",
        uri,
    ]
    driver = subprocess.Popen(
        command,
        cwd=in_tmp,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    runs = in_tmp / "sweeplab-runs" / "killed"

    def reports() -> dict[str, int]:
        """Each trial's reports on disk: the lines of its result.json."""
        return {
            p.parent.name: len(p.read_text().splitlines())
            for p in runs.glob("run-*/trials/*/result.json")
        }

    def snapshot() -> bool:
        return bool(list(runs.glob("run-*/loop_state.pkl")))

    def ready() -> bool:
        """A trial has ended (all 8 reports) and the loop's snapshot is on disk."""
        return any(n >= 8 for n in reports().values()) and snapshot()

    # Kill the driver once a trial has ended, before the sweep can finish.
    kill_when(driver, ready, "the sweep never ended a trial")
    ended = [trial for trial, n in reports().items() if n >= 8]
    assert sum(reports().values()) < 4 * 8, "the sweep had finished before the kill"
    # What the killed driver's Ray left behind is stopped, as a crashed machine would leave it.
    # Only that Ray: `ray stop` would also stop this test session's Ray and everyone else's.
    _stop_orphans(driver.pid)

    resumed = subprocess.run(
        [*command, "--resume"], cwd=in_tmp, capture_output=True, text=True, timeout=600
    )
    _stop_orphans(driver.pid)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]

    assert "killed: 4 trials in" in resumed.stdout, resumed.stdout[-3000:]
    (trials,) = runs.glob("run-*/trials")
    for trial_id in ended:
        # A trial that had ended before the kill did not run again (one run folder).
        assert len(list(trials.glob(f"{trial_id}_*"))) == 1, trial_id
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("killed")
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if r.data.tags.get("sweeplab.role") == "sweep"]
    children = [r for r in runs if r.data.tags.get("sweeplab.role") == "trial"]
    assert len(parents) == 1, "resume must continue the same parent run"
    trial_ids = [r.data.tags["sweeplab.trial_id"] for r in children]
    assert len(trial_ids) == len(set(trial_ids)) == 4, "one child run per trial, 4 trials"
    assert {r.info.status for r in children} == {"FINISHED"}
    assert {r.data.tags["sweeplab.status"] for r in children} == {"finished"}
    for run in children:
        history = client.get_metric_history(run.info.run_id, "loss")
        steps = sorted(m.step for m in history)
        assert steps == list(range(1, 9)), f"{run.data.tags['sweeplab.trial_id']}: {steps}"


def kill_when(
    driver: subprocess.Popen[bytes], ready: Callable[[], bool], never: str, within_s: float = 240
) -> None:
    """SIGKILLs `driver` once `ready()` holds (polled), or fails the test with `never` if it
    does not within `within_s`."""
    deadline = time.monotonic() + within_s
    while not ready():
        if time.monotonic() > deadline:
            driver.kill()
            pytest.fail(never)
        time.sleep(0.2)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait(timeout=30)


def _stop_orphans(driver_pid: int) -> None:
    """Stops the local Ray the killed driver had started (its session name ends in its pid)."""
    # session_<date>_<time>_<microseconds>_<pid>: match the pid as the whole last field only.
    marker = re.compile(rf"session_\d{{4}}-\d\d-\d\d_\d\d-\d\d-\d\d_\d+_{driver_pid}(?!\d)")
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker.search(cmdline):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(proc.name), signal.SIGKILL)
