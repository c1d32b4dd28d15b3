"""A trial actor that is starting is not killed to give its trial another trial's actor.

When a trial ends, Tune hands its actor to the next waiting trial; when that trial's own
actor already had its resources and was starting, Tune killed it. Where an actor takes longer
to start than the gap between two trial ends, each new actor was killed before it was ready,
again and again, and the slot it was for stayed empty to the end of the sweep
(`raycompat.let_starting_trial_actors_start`). Here the first trial fails, so its slot needs
a new actor, which takes a second to start (`slow_start_helper`), while the other slot's
trials end every 50 ms.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sweeplab.engine import SweepOptions, run_sweep
from sweeplab.spec import load_spec

pytestmark = pytest.mark.slow

SPEC = """
import os
import time
from pathlib import Path

import ray.train
import slow_start_helper

import sweeplab
from sweeplab import uniform


def train_func(config):
    assert slow_start_helper.started()
    Path({folder!r}, "pids", str(os.getpid())).touch()
    first = Path({folder!r}, "first")
    if not first.exists():
        first.touch()
        raise RuntimeError("the first trial fails: its slot needs a new actor")
    time.sleep(0.05)
    ray.train.report({{"loss": config["x"]}})


sweep = sweeplab.Sweep(
    name="short-trials", train_func=train_func, space={{"x": uniform(0, 1)}}, metric="loss",
    mode="min", num_trials=60, max_iterations=1, max_concurrent_trials=2, seed=0,
)
"""


def test_a_slot_whose_actor_starts_late_still_runs_trials(ray_local: None, tmp_path: Path) -> None:
    (tmp_path / "pids").mkdir()
    spec = tmp_path / "spec.py"
    spec.write_text(SPEC.format(folder=str(tmp_path)))
    options = SweepOptions(
        spec_path=spec, storage=tmp_path / "runs", live=False, track=False, engine="tune"
    )
    outcome = run_sweep(load_spec(spec), options)
    assert outcome.trials == 60 and outcome.errored == 1
    # The two first actors, then the one that replaced the failed trial's and ran trials too.
    assert len(list((tmp_path / "pids").iterdir())) >= 3
