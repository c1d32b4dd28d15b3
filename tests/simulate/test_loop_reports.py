"""The engine's loop keeps only an ended trial's last result (`keep_reports=False`), and decides
exactly as the simulator's loop, which keeps every report."""

from __future__ import annotations

import pytest
from test_simulate import make, step_curve

from sweeplab.loop import sweep_loop
from sweeplab.pareto import Objective
from sweeplab.simulation._backend import SimulatedBackend


def run(scheduler: str, *, keep_reports: bool) -> object:
    sweep = make(scheduler=scheduler, searcher="random", num_trials=12, seed=4)
    backend = SimulatedBackend(step_curve, (Objective(sweep.metric, sweep.mode),))
    loop = sweep_loop(sweep, backend, workers=3, keep_reports=keep_reports)
    try:
        loop.run()
    finally:
        loop.close()
    return loop


@pytest.mark.parametrize("scheduler", ["fifo", "asha", "hyperband", "pbt"])
def test_an_ended_trial_keeps_only_its_last_result(scheduler: str) -> None:
    kept, lean = run(scheduler, keep_reports=True), run(scheduler, keep_reports=False)
    assert lean.reports == [] and lean.report_count == len(kept.reports) > 0
    assert all(t.reports == [] for t in lean.trials)
    assert [t.last_result["training_iteration"] for t in lean.trials] == [
        len(t.reports) for t in kept.trials
    ]
    assert [seen(t) for t in lean.trials] == [seen(t) for t in kept.trials]


def seen(trial: object) -> tuple:
    """What a trial ended with, but the run's random trial-id prefix."""
    last = {k: v for k, v in trial.last_result.items() if k != "trial_id"}
    return trial.trial_id.split("_")[1], trial.decoded, trial.outcome, last
