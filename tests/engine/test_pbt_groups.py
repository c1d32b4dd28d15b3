"""PBT over 2-worker trials with a population larger than the warm slots, on a real local Ray.

A paused trial's run must leave its slot at the pause, or the trials waiting for a slot never
get one and the sweep hangs after one round.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from toy_spec import progress_rows, run_toy_sweep, trial_errors


@pytest.mark.slow
def test_pbt_population_of_four_on_one_slot_finishes_with_exploits(
    ray_local: None, in_tmp: Path
) -> None:
    """Population 4 of 2-worker trials on the one slot 2 CPUs hold (two slots, population 4:
    `test_engine_slots`). Two iterations, one round: each trial runs two segments, and each
    segment starts a trial actor (about 2 s here). PBT's settings object, mutating `lr` only:
    an exploited trial keeps its donor's `x`."""
    outcome = run_toy_sweep(
        in_tmp,
        'name="pbt-groups", space={"x": uniform(0, 1), "lr": uniform(0.001, 1.0)}, '
        'metric="loss", mode="min", scheduler=sweeplab.PBT(interval=1, mutate=["lr"]), '
        "num_trials=4, max_iterations=2, seed=3, "
        "workers_per_trial=2, cpus_per_worker=1",
        epochs=2,
        sleep=0.02,
    )
    assert outcome.plan.concurrency == 1
    rows = progress_rows(outcome)
    assert len(rows) == 4 and outcome.errored == 0, trial_errors(outcome)
    assert {trial: r[-1]["training_iteration"] for trial, r in rows.items()} == dict.fromkeys(
        rows, 2
    )
    exploited = [
        after
        for trial_rows in rows.values()
        for before, after in itertools.pairwise(trial_rows)
        if after["origin"] != before["origin"]
    ]
    assert exploited, "PBT exploited no trial"
    # One round (at iteration 1): each donor still has its own config, whose `x` the
    # recipient keeps (only `lr` is mutated).
    donors = {r[0]["origin"]: json.loads(r[0]["config_json"]) for r in rows.values()}
    for after in exploited:
        assert json.loads(after["config_json"])["x"] == donors[after["origin"]]["x"]
