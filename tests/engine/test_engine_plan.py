"""Resource planning and trial plans, computed without starting Ray."""

from __future__ import annotations

from typing import Any

import pytest

from sweeplab import ResourceError, Sweep, grid, uniform
from sweeplab.engine import plan_resources, trial_plan


def train_func(config: dict[str, Any]) -> None:
    pass


def make(**changes: Any) -> Sweep:
    fields: dict[str, Any] = {
        "name": "p",
        "train_func": train_func,
        "space": {"x": uniform(0, 1)},
        "metric": "m",
        "mode": "min",
        "num_trials": 8,
    }
    return Sweep(**{**fields, **changes})


TWO_CPU = [{"CPU": 2.0}]
TWO_NODES = [{"CPU": 2.0, "a": 1.0}, {"CPU": 2.0, "b": 1.0}]


@pytest.mark.parametrize(
    ("changes", "nodes", "concurrency"),
    [
        ({}, TWO_CPU, 2),
        ({"workers_per_trial": 2}, TWO_CPU, 1),
        ({"workers_per_trial": 2, "cpus_per_worker": 0.5}, TWO_CPU, 2),
        ({"workers_per_trial": 2}, TWO_NODES, 2),
        ({"workers_per_trial": 3, "placement_strategy": "SPREAD"}, TWO_NODES, 1),
        ({"workers_per_trial": 2, "placement_strategy": "STRICT_SPREAD"}, TWO_NODES, 2),
        ({"workers_per_trial": 2, "placement_strategy": "STRICT_PACK"}, TWO_NODES, 2),
        ({"max_concurrent_trials": 1}, TWO_CPU, 1),
        ({"num_trials": 1}, [{"CPU": 16.0}], 1),
        ({"workers_per_trial": (1, 4)}, TWO_CPU, 1),
        ({"use_gpu": True, "gpus_per_worker": 0.25}, [{"CPU": 16.0, "GPU": 1.0}], 4),
    ],
)
def test_concurrency(
    changes: dict[str, Any], nodes: list[dict[str, float]], concurrency: int
) -> None:
    assert plan_resources(make(**changes), nodes).concurrency == concurrency


@pytest.mark.parametrize(
    ("changes", "nodes"),
    [
        ({"workers_per_trial": 3}, TWO_CPU),
        ({"use_gpu": True}, TWO_CPU),
        ({"resources_per_worker": {"c": 1}}, TWO_NODES),
        ({"workers_per_trial": 3, "placement_strategy": "STRICT_SPREAD"}, TWO_NODES),
        ({"workers_per_trial": 3, "placement_strategy": "STRICT_PACK"}, TWO_NODES),
        ({"cpus_per_worker": 4}, TWO_NODES),
    ],
)
def test_never_fits(changes: dict[str, Any], nodes: list[dict[str, float]]) -> None:
    with pytest.raises(ResourceError, match="can never hold it"):
        plan_resources(make(**changes), nodes)


def test_grid_counts_every_combination() -> None:
    sweep = make(searcher="grid", num_trials=2, space={"a": grid([1, 2, 3]), "b": grid([0, 1])})
    assert plan_resources(sweep, TWO_CPU).total_trials == 12


def test_asha_rungs() -> None:
    rungs, budget, summary = trial_plan(make(scheduler="asha", num_trials=27, max_iterations=9))
    assert [(r.iteration, r.trials) for r in rungs] == [(1, 27), (3, 9), (9, 3)]
    assert budget == 27 * 1 + 9 * 2 + 3 * 6
    assert "ASHA" in summary


def test_hyperband_brackets() -> None:
    rungs, budget, _ = trial_plan(make(scheduler="hyperband", num_trials=9, max_iterations=9))
    assert {r.bracket for r in rungs} == {0, 1, 2}
    assert max(r.iteration for r in rungs) == 9
    assert budget > 0


@pytest.mark.parametrize("scheduler", ["fifo", "median", "pbt"])
def test_flat_plans_budget(scheduler: str) -> None:
    rungs, budget, summary = trial_plan(make(scheduler=scheduler, max_iterations=5))
    assert rungs == [] and budget == 8 * 5 and summary
