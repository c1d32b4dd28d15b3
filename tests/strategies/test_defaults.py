"""The strategy a sweep runs when its spec leaves the searcher, the scheduler or both out."""

from __future__ import annotations

from typing import Any

import pytest

from sweeplab import Sweep, grid, loguniform
from sweeplab.errors import SpecError
from sweeplab.strategies import default_strategy


def train_func(config: dict[str, Any]) -> None:
    pass


BASE: dict[str, Any] = {
    "name": "defaults",
    "train_func": train_func,
    "space": {"lr": loguniform(1e-4, 1e-1)},
    "metric": "loss",
    "mode": "min",
}
TWO_METRICS = {"metric": ["loss", "latency"], "mode": ["min", "min"]}


def make(**changes: Any) -> Sweep:
    return Sweep(**{**BASE, **changes})


@pytest.mark.parametrize(
    ("changes", "searcher", "scheduler", "defaulted"),
    [
        # The kinds of sweep, nothing named: the best measured for each.
        ({}, "optuna", "adaptive-asha", ("searcher", "scheduler")),
        (TWO_METRICS, "random", "asha", ("searcher", "scheduler")),
        ({"max_iterations": 1}, "random", "fifo", ("searcher", "scheduler")),
        ({**TWO_METRICS, "max_iterations": 1}, "random", "fifo", ("searcher", "scheduler")),
        # One half named: it is kept, and the other half is filled within what it allows.
        ({"searcher": "random"}, "random", "adaptive-asha", ("scheduler",)),
        ({"searcher": "hyperopt"}, "hyperopt", "adaptive-asha", ("scheduler",)),
        ({"searcher": "grid", "space": {"lr": grid([0.1, 0.2])}}, "grid", "fifo", ("scheduler",)),
        ({"scheduler": "pbt"}, "random", "pbt", ("searcher",)),
        ({"scheduler": "fifo"}, "optuna", "fifo", ("searcher",)),
        ({"scheduler": "asha", **TWO_METRICS}, "random", "asha", ("searcher",)),
        # Both named: nothing is filled.
        ({"searcher": "random", "scheduler": "fifo"}, "random", "fifo", ()),
    ],
)
def test_what_is_left_out_is_the_measured_best_for_the_kind(
    changes: dict[str, Any], searcher: str, scheduler: str, defaulted: tuple[str, ...]
) -> None:
    sweep = make(**changes)
    assert (sweep.searcher, sweep.scheduler, sweep.defaulted) == (searcher, scheduler, defaulted)
    if defaulted:
        assert "docs/search.md#the-default-strategy" in sweep.strategy_note
        assert all(f"{field} {getattr(sweep, field)}" in sweep.strategy_note for field in defaulted)
    else:
        assert sweep.strategy_note == ""


def test_the_why_names_the_kind_and_the_reason() -> None:
    assert make().strategy_note == (
        "defaults for one metric and 10 reports a trial: searcher optuna + scheduler "
        "adaptive-asha (the best measured; docs/search.md#the-default-strategy)"
    )
    assert "nothing to stop early" in make(max_iterations=1).strategy_note
    assert "PBT draws its own population" in make(scheduler="pbt").strategy_note


def test_a_copy_chooses_again_what_the_defaults_chose() -> None:
    sweep = make()
    one_report = sweep.replace(max_iterations=1)
    assert (one_report.searcher, one_report.scheduler) == ("random", "fifo")
    assert sweep.replace(**TWO_METRICS).scheduler == "asha"
    # What the spec named stays named.
    named = make(searcher="random", scheduler="asha").replace(max_iterations=1)
    assert (named.searcher, named.scheduler, named.defaulted) == ("random", "asha", ())
    # A copy that changes nothing is the same sweep.
    assert sweep.replace() == sweep


def test_the_defaults_never_pick_what_other_fields_rule_out() -> None:
    # A warm start needs a searcher that takes one: the defaults' does.
    assert make(warm_start=[{"lr": 0.01}]).searcher == "optuna"
    # PBT takes no model-based searcher: the default under it is random.
    assert make(scheduler="pbt").searcher == "random"
    # An explicit strategy the kind rules out is still refused, in one line.
    with pytest.raises(SpecError, match="`scheduler`"):
        make(scheduler="hyperband", **TWO_METRICS)


@pytest.mark.parametrize("objectives", [1, 2])
@pytest.mark.parametrize("max_iterations", [1, 2, 50])
def test_the_choice_is_a_function_of_the_kind_alone(objectives: int, max_iterations: int) -> None:
    first = default_strategy(
        searcher=None, scheduler=None, objectives=objectives, max_iterations=max_iterations
    )
    again = default_strategy(
        searcher=None, scheduler=None, objectives=objectives, max_iterations=max_iterations
    )
    assert first == again
    assert first.chosen == ("searcher", "scheduler")
