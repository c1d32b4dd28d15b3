"""The samplers' shortcuts for long simulated sweeps give what the full computation gives.

`RungSampler` keeps its views of the study in step trial by trial, reading only the trials that
are new or still open; `RandomInterleavedSampler` draws each trial's path once. Both must leave
every suggestion as it was: here the kept views are compared, at every suggestion of a sweep
with stopped, failed and concurrent trials, with views built afresh from the whole study.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState

from sweeplab.space._random_interleave import RandomInterleavedSampler
from sweeplab.space._rung_sampler import RungSampler, _step_counts
from sweeplab.space._trial_draws import RANDOM_PATH, trial_draw

RUNGS = (1, 3, 9)  # a trial may stop after each of these steps; 9 is the last
WORKERS = 4
TRIALS = 70


def _loss(params: dict[str, float], step: int) -> float:
    """Early steps favour small x, the last ones x near 0.7 (the ranking moves)."""
    x, y = params["x"], params["y"]
    weight = step / RUNGS[-1]
    return (1 - weight) * x + weight * (x - 0.7) ** 2 + 0.1 * y + 1 / step


def _summary(trials: list[FrozenTrial]) -> list[tuple[Any, ...]]:
    return [
        (t.number, t.state, t.value, t.params, t.distributions, t.intermediate_values)
        for t in trials
    ]


def _fresh(sampler: RungSampler) -> RungSampler:
    """A sampler of the same settings and seed, with nothing read yet."""
    fresh = RungSampler(
        sampler.base,
        sampler.min_points,
        view=sampler.view,
        aggregate=sampler.aggregate,
        weighting=sampler.weighting,
    )
    fresh._entropy = sampler._entropy  # the same rung draws
    return fresh


def _check(sampler: RungSampler, study: optuna.Study, trial: FrozenTrial) -> int:
    """The view `sampler` keeps equals one built afresh; returns the trials it modelled."""
    kept, shadow = sampler._view(study, trial)
    built, _ = _fresh(sampler)._view(study, trial)
    assert shadow.number == trial.number
    assert _summary(kept.get_trials(deepcopy=False)) == _summary(built.get_trials(deepcopy=False))
    trials = study.get_trials(deepcopy=False)
    scan = sampler._scan
    assert scan is not None
    assert scan.finished == sum(t.state.is_finished() for t in trials)
    assert scan.step_counts == _step_counts(trials)
    assert scan.pruned == any(t.state == TrialState.PRUNED for t in trials)
    return sum(t.state == TrialState.COMPLETE for t in kept.get_trials(deepcopy=False))


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"view": "pruned"},
        {"weighting": True},
        {"weighting": True, "view": "pruned"},
        {"aggregate": "last"},
    ],
)
def test_the_kept_views_are_the_views_built_afresh(options: dict[str, Any]) -> None:
    base = optuna.samplers.TPESampler(
        seed=0, n_startup_trials=5, multivariate=True, constant_liar=True
    )
    sampler = RungSampler(base, 4, seed=0, **options)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    rng = np.random.default_rng(0)
    running: list[tuple[optuna.Trial, int]] = []  # (trial, steps reported)
    modelled = []
    asked = 0
    while asked < TRIALS or running:
        while asked < TRIALS and len(running) < WORKERS:
            trial = study.ask()
            trial.suggest_float("x", 0, 1)
            if rng.random() < 0.8:  # a conditional parameter: the view must add it later
                trial.suggest_float("y", 0, 1)
            running.append((trial, 0))
            asked += 1
            modelled.append(_check(sampler, study, study.get_trials(deepcopy=False)[-1]))
        trial, steps = running.pop(int(rng.integers(len(running))))
        step = steps + 1
        value = _loss({"y": 0.5, **trial.params}, step)
        trial.report(value, step)
        if rng.random() < 0.03:
            study.tell(trial, state=TrialState.FAIL)
        elif step == RUNGS[-1]:
            study.tell(trial, value)
        elif step in RUNGS and rng.random() < 2 / 3:  # stopped at a rung, as ASHA stops most
            study.tell(trial, state=TrialState.PRUNED)
        else:
            running.append((trial, step))
    # The views were the model's, not the bare study: the rung rule took over.
    assert max(modelled) >= 4
    assert sum(t.state == TrialState.PRUNED for t in study.trials) > TRIALS / 3


def test_a_sampler_reads_a_new_study_afresh() -> None:
    sampler = RungSampler(optuna.samplers.RandomSampler(seed=0), 2)
    for name in ("first", "second"):
        study = optuna.create_study(study_name=name, sampler=sampler)
        for x in (0.1, 0.2, 0.3):
            trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
            trial.report(x, 1)
            study.tell(trial, x)
        study.ask()
        _check(sampler, study, study.get_trials(deepcopy=False)[-1])
        assert sampler._scan is not None and sampler._scan.read == 4


@pytest.mark.parametrize("fraction", [0.0, 1 / 3, 0.9])
def test_each_trial_is_drawn_random_as_its_own_draw_says(fraction: float) -> None:
    sampler = RandomInterleavedSampler(optuna.samplers.RandomSampler(), fraction, seed=7)
    order = [3, 3, 5, 3, 0, 0, 8, 5, 5, 2, 13, 3]  # calls about a trial repeat, in any order
    expected = [trial_draw(sampler._entropy, RANDOM_PATH, n) < fraction for n in order]
    assert [sampler.is_random(n) for n in order] == expected
    sampler.reseed_rng()  # a new stream: nothing of the old one is kept
    assert [sampler.is_random(n) for n in order] == [
        trial_draw(sampler._entropy, RANDOM_PATH, n) < fraction for n in order
    ]
    assert math.isclose(
        np.mean([sampler.is_random(n) for n in range(3000)]), fraction, abs_tol=0.03
    )
