"""The stall watchdog on a real local Ray: a trial that never reports again stalls the sweep."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

STUCK_SPEC = """
import time

from ray import train

import sweeplab
from sweeplab import uniform


def train_func(config):
    train.report({"loss": config["x"]})
    time.sleep(3600)  # never reports again, never ends


sweep = sweeplab.Sweep(
    train_func=train_func, name="stuck", space={"x": uniform(0, 1)}, metric="loss",
    mode="min", num_trials=1, max_iterations=5,
)
"""


def test_fail_on_stall_names_the_stuck_trial_and_exits_1(
    idle_ray: None, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sweeplab.cli import main

    spec = in_tmp / "stuck.py"
    spec.write_text(STUCK_SPEC)
    started = time.monotonic()
    code = main(
        [
            "sweep",
            str(spec),
            "--no-live",
            "--storage",
            str(in_tmp / "runs"),
            "--tracking-uri",
            f"sqlite:///{in_tmp / 'mlflow.db'}",
            "--stall-timeout",
            # Past the trial actor's start, which took over 3 s on a loaded 2-core machine.
            "10",
            "--fail-on-stall",
        ]
    )
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 1, err
    assert elapsed < 60, f"the stalled sweep took {elapsed:.0f}s to fail"
    lines = [line for line in err.splitlines() if line.startswith("sweeplab: sweep stalled:")]
    assert len(lines) == 1, err
    match = re.search(r"waiting for (\S+) RUNNING at iteration 1, last report \d+s ago;", lines[0])
    assert match, lines[0]
    trial_id = match.group(1)
    assert "limit 10s" in lines[0]
    (report,) = (in_tmp / "runs" / "stuck").glob("run-*/stall.txt")
    trials = report.parent / "trials"
    assert [p for p in trials.iterdir() if trial_id in p.name], "not a trial"
    assert trial_id in report.read_text()
    assert "CPU:" in report.read_text()  # what the cluster has free, from Ray
    assert trial_id in (report.parent / "ray.log").read_text()
