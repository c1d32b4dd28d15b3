"""The adaptive ASHA: a first rung on probation is trusted only when its cut keeps the best.

No Ray is started: the scheduler is fed fake trials and results as Tune's controller feeds them.
"""

from __future__ import annotations

import pickle
import random
from typing import Any

import pytest

from sweeplab import SpecError, Sweep, uniform
from sweeplab.pareto import Objective
from sweeplab.strategies import AdaptiveASHA, MultiObjectiveASHA, build_scheduler, trial_plan

LOSS = Objective("loss", "min")


class FakeTrial:
    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id
        self.status = "PENDING"


def run_sweep(scheduler: Any, curves: list[list[float]]) -> list[int]:
    """Feeds each trial's curve one at a time (concurrency 1); returns each trial's last
    iteration (where the scheduler stopped it, or the curve's end)."""
    stopped_at = []
    for index, curve in enumerate(curves):
        trial = FakeTrial(f"t{index:03d}")
        scheduler.on_trial_add(None, trial)
        last = {}
        for iteration, loss in enumerate(curve, start=1):
            last = {"training_iteration": iteration, "loss": loss}
            if scheduler.on_trial_result(None, trial, last) == "STOP":
                break
        scheduler.on_trial_complete(None, trial, last)
        stopped_at.append(last["training_iteration"])
    return stopped_at


def curves_of(finals: list[float], firsts: list[float], length: int = 27) -> list[list[float]]:
    """Curves that go from `firsts` at iteration 1 to `finals` at the end, linearly after
    iteration 1 (so every rung from 3 on ranks trials as their finals do)."""
    out = []
    for first, final in zip(firsts, finals, strict=True):
        out.append([first] + [final + 0.5 * (length - t) / length for t in range(2, length + 1)])
    return out


def scheduler(**kwargs: Any) -> AdaptiveASHA:
    return AdaptiveASHA(objectives=[LOSS], max_t=27, **kwargs)


def test_a_first_rung_that_ranks_as_the_end_is_trusted_and_then_stops_trials() -> None:
    gen = random.Random(0)
    finals = [gen.random() for _ in range(80)]
    # Iteration 1 ranks exactly as the end does.
    asha = scheduler()
    stopped = run_sweep(asha, curves_of(finals, [f + 1 for f in finals]))
    assert asha.on_probation == []
    assert 1 in asha.trusted
    trusted_after = asha.trusted[1]
    assert trusted_after < 40  # learned early in an 80-trial sweep
    assert all(s >= 3 for s in stopped[:trusted_after])  # nobody stopped at 1 before
    assert sum(s == 1 for s in stopped[trusted_after:]) >= 20  # after, ASHA cuts at 1


def test_a_first_rung_that_misleads_stays_on_probation_and_stops_nobody() -> None:
    gen = random.Random(1)
    finals = [gen.random() for _ in range(80)]
    # Iteration 1 ranks trials in the reverse order of the end.
    asha = scheduler()
    stopped = run_sweep(asha, curves_of(finals, [2 - f for f in finals]))
    assert asha.on_probation == [1]
    assert asha.trusted == {}
    assert all(s >= 3 for s in stopped)
    assert any(s == 3 for s in stopped)  # rung 3 is trusted from the start: it cuts


def test_trusted_from_1_is_asha_with_grace_period_1() -> None:
    gen = random.Random(2)
    curves = [[gen.random() + 1 / t for t in range(1, 28)] for _ in range(60)]
    adaptive = run_sweep(scheduler(trusted_from=1), curves)
    plain = run_sweep(
        MultiObjectiveASHA(objectives=[LOSS], max_t=27, grace_period=1, reduction_factor=3),
        curves,
    )
    assert adaptive == plain
    assert adaptive.count(1) > 20


def test_it_pickles_mid_sweep_and_goes_on_alike() -> None:
    gen = random.Random(3)
    finals = [gen.random() for _ in range(60)]
    curves = curves_of(finals, [f + 1 for f in finals])
    one, two = scheduler(), scheduler()
    run_sweep(one, curves[:20])
    run_sweep(two, curves[:20])
    restored = pickle.loads(pickle.dumps(two))
    assert run_sweep(one, curves[20:]) == run_sweep(restored, curves[20:])


@pytest.mark.parametrize(
    ("kwargs", "rule"),
    [
        ({"trusted_from": 0}, "1 <= trusted_from <= max_t"),
        ({"trusted_from": 28}, "1 <= trusted_from <= max_t"),
        ({"evidence": 0}, "`evidence` must be an integer >= 1"),
        ({"evidence": True}, "`evidence` must be an integer >= 1"),
        ({"objectives": [LOSS, Objective("ms", "min")]}, "takes one objective"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, Any], rule: str) -> None:
    arguments: dict[str, Any] = {"objectives": [LOSS], "max_t": 27, **kwargs}
    with pytest.raises(SpecError, match=rule.replace("(", r"\(").replace("`", "`")):
        AdaptiveASHA(**arguments)


def _sweep(**overrides: Any) -> Sweep:
    fields: dict[str, Any] = {
        "name": "adaptive",
        "train_func": lambda config: None,
        "space": {"x": uniform(0, 1)},
        "metric": "loss",
        "mode": "min",
        "scheduler": "adaptive-asha",
        "num_trials": 30,
        "max_iterations": 27,
    }
    return Sweep(**{**fields, **overrides})


def test_the_named_scheduler_builds_it_on_the_sweeps_metric_and_previews_its_rungs() -> None:
    built = build_scheduler(_sweep())
    assert isinstance(built, AdaptiveASHA)
    assert built.on_probation == [1]
    _, _, summary = trial_plan(_sweep())
    assert "rung 1 on probation" in summary


@pytest.mark.parametrize(("max_iterations", "probation"), [(1, []), (2, [1]), (3, [1])])
def test_a_short_sweep_builds_with_its_first_rung_on_probation(
    max_iterations: int, probation: list[int]
) -> None:
    # The default strategy of any sweep with several reports a trial: it must build for each.
    built = build_scheduler(_sweep(max_iterations=max_iterations))
    assert isinstance(built, AdaptiveASHA)
    assert built.on_probation == probation
    assert trial_plan(_sweep(max_iterations=max_iterations))[1] >= 1


def test_several_metrics_are_refused_by_name() -> None:
    with pytest.raises(SpecError, match="scheduler"):
        _sweep(metric=["loss", "ms"], mode=["min", "min"])
