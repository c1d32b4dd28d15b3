"""The search levers of OptunaSearcher (rung view, random interleaving, rung weighting, last-value
aggregation) on Optuna's real studies, and end to end through the simulator."""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Sequence
from typing import Any

import optuna
import pytest
from optuna.distributions import BaseDistribution, FloatDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from sweeplab import OptunaSearcher, SpecError, Sweep, uniform
from sweeplab.simulation import simulate
from sweeplab.space import Space
from sweeplab.space._optuna_searcher import handover_trials
from sweeplab.space._random_handover import RandomHandoverSampler
from sweeplab.space._random_interleave import RandomInterleavedSampler
from sweeplab.space._rung_sampler import RungSampler, rank_agreement

optuna.logging.set_verbosity(optuna.logging.WARNING)

C, P, F, R = TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING
X = FloatDistribution(0.0, 1.0)

# A study as ASHA leaves it, with rungs at 1, 3 and 9: (state, values by step). Trial 1 is the
# misleading one: best at rung 1, stopped there. At rung 3 the finished trials rank 4, 6, 5, as
# at rung 9 but for one pair of three (tau 1/3); at rung 1 they rank 5, 6, 4 (tau -1/3).
HISTORY: list[tuple[TrialState, dict[int, float]]] = [
    (P, {1: 5.0}),
    (P, {1: 0.5}),
    (P, {1: 2.5, 3: 1.0}),
    (P, {1: 3.0, 3: 0.8}),
    (C, {1: 4.0, 3: 0.6, 9: 0.2}),
    (C, {1: 1.0, 3: 0.9, 9: 0.3}),
    (C, {1: 2.0, 3: 0.7, 9: 0.4}),
    (F, {1: 0.1}),  # errored
]


def _study(sampler: BaseSampler) -> optuna.Study:
    study = optuna.create_study(direction="minimize", sampler=sampler)
    for i, (state, steps) in enumerate(HISTORY):
        study.enqueue_trial({"x": i / 10})
        trial = study.ask({"x": X})
        for step, value in steps.items():
            trial.report(value, step)
        if state == C:
            study.tell(trial, list(steps.values())[-1])
        else:
            study.tell(trial, state=state)
    return study


def _view(sampler: RungSampler, study: optuna.Study) -> optuna.Study:
    """The study the base sampler gets when the next trial asks."""
    running = study.ask()
    view, shadow = sampler._view(study, study.trials[running.number])
    assert shadow.number == running.number
    return view


AT_9 = [(C, 0.2), (C, 0.3), (C, 0.4)]
AT_3 = [(C, 1.0), (C, 0.8), (C, 0.6), (C, 0.9), (C, 0.7)]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # Today: stopped below the rung -> PRUNED (bad).
        ({"view": "pruned"}, {9: [(P, None)] * 4 + AT_9}),
        # BOHB: stopped below the rung -> left out (FAIL: no sampler models it).
        ({}, {9: [(F, None)] * 4 + AT_9}),
        # Hyper-Tune: rung 3 (weight 1/3) or rung 9 (weight 1), never rung 1 (weight 0).
        (
            {"weighting": True, "view": "pruned"},
            {9: [(P, None)] * 4 + AT_9, 3: [(P, None)] * 2 + AT_3},
        ),
        (
            {"weighting": True, "view": "bohb"},
            {9: [(F, None)] * 4 + AT_9, 3: [(F, None)] * 2 + AT_3},
        ),
        # Last value: every ended trial COMPLETE with its last value.
        (
            {"aggregate": "last"},
            {None: [(C, 5.0), (C, 0.5), (C, 1.0), (C, 0.8), (C, 0.2), (C, 0.3), (C, 0.4)]},
        ),
    ],
)
def test_the_view_the_base_sampler_gets(
    options: dict[str, Any], expected: dict[int | None, list[tuple[TrialState, float | None]]]
) -> None:
    seen = set()
    for seed in range(12):  # the weighted rung is drawn per trial: seeds that draw each rung
        sampler = RungSampler(optuna.samplers.RandomSampler(), min_points=3, seed=seed, **options)
        study = _study(sampler)
        view = _view(sampler, study)
        rung = None if options.get("aggregate") == "last" else sampler.rung_for(study.trials, 8)
        seen.add(rung)
        ended = [(t.state, t.value) for t in view.trials[:7]]
        assert ended == expected[rung]
        # Every trial keeps its number and params; the errored and the running one stay as
        # they are.
        assert [t.params["x"] for t in view.trials[:8]] == [i / 10 for i in range(8)]
        assert [t.state for t in view.trials[7:]] == [F, R]
        if rung is not None:  # complete at the rung with the steps up to it
            steps = HISTORY[4][1]
            assert view.trials[4].intermediate_values == {s: steps[s] for s in steps if s <= rung}
        # The study itself is untouched.
        assert [t.state for t in study.trials[:8]] == [state for state, _ in HISTORY]
    assert seen == set(expected)


def test_a_stopped_trial_with_no_value_is_left_out_of_the_last_value_view() -> None:
    sampler = RungSampler(optuna.samplers.RandomSampler(seed=0), min_points=3, aggregate="last")
    study = _study(sampler)
    trial = study.ask({"x": X})  # removed while pending: PRUNED with no report
    study.tell(trial, state=P)
    assert _view(sampler, study).trials[8].state == F


def test_rung_weights_are_rank_agreement_with_the_top() -> None:
    weighted = RungSampler(optuna.samplers.RandomSampler(seed=0), min_points=3, weighting=True)
    study = _study(weighted)
    assert weighted.rung_weights(study.trials) == pytest.approx({1: 0.0, 3: 1 / 3, 9: 1.0})
    plain = RungSampler(optuna.samplers.RandomSampler(seed=0), min_points=3)
    assert plain.rung_weights(study.trials) == {9: 1.0}
    # Rung 9 with only 2 trials: the top is rung 3, weighted 1, and rung 1 against it.
    assert RungSampler(plain.base, min_points=4, weighting=True).rung_weights(study.trials) == {
        1: pytest.approx(
            rank_agreement([(2.5, 1.0), (3.0, 0.8), (4.0, 0.6), (1.0, 0.9), (2.0, 0.7)])
        ),
        3: 1.0,
    }


def test_each_rung_proposes_its_weights_share_reproducibly() -> None:
    sampler = RungSampler(
        optuna.samplers.RandomSampler(seed=0), min_points=3, weighting=True, seed=5
    )
    trials = _study(sampler).trials
    weights = sampler.rung_weights(trials)
    picks = [sampler.pick_rung(weights, n) for n in range(4000)]
    assert picks[:50] == [sampler.rung_for(trials, n) for n in range(50)]
    shares = Counter(picks)
    assert set(shares) == {3, 9}
    assert shares[3] / len(picks) == pytest.approx(0.25, abs=0.03)  # 1/3 of 1 + 1/3
    again = RungSampler(sampler.base, min_points=3, weighting=True, seed=5)
    assert [again.pick_rung(weights, n) for n in range(4000)] == picks
    other = RungSampler(sampler.base, min_points=3, weighting=True, seed=6)
    assert [other.pick_rung(weights, n) for n in range(4000)] != picks


@pytest.mark.parametrize(
    ("pairs", "agreement"),
    [
        ([(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)], 1.0),
        ([(1.0, 3.0), (2.0, 2.0), (3.0, 1.0)], 0.0),  # reversed: clipped at 0
        ([(1.0, 1.0), (2.0, 3.0), (3.0, 2.0)], pytest.approx(1 / 3)),
        ([(1.0, 1.0), (1.0, 2.0)], 0.0),  # a constant ranking: undefined
        ([(1.0, 1.0)], 0.0),
    ],
)
def test_rank_agreement(pairs: list[tuple[float, float]], agreement: float) -> None:
    assert rank_agreement(pairs) == agreement


class _Fixed(BaseSampler):
    """A "model" that always proposes x = 0.5, so the random path is told by its values."""

    def infer_relative_search_space(self, study: Any, trial: Any) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(self, study: Any, trial: Any, search_space: Any) -> dict[str, Any]:
        return {}

    def sample_independent(self, study: Any, trial: Any, name: str, dist: Any) -> Any:
        return 0.5


def _proposals(fraction: float, seed: int, n: int = 1000) -> list[float]:
    study = optuna.create_study(sampler=RandomInterleavedSampler(_Fixed(), fraction, seed=seed))
    proposed = []
    for _ in range(n):
        trial = study.ask()
        proposed.append(trial.suggest_float("x", 0.0, 1.0))
        study.tell(trial, 1.0)
    assert all(t.state == C and "x" in t.params for t in study.trials)  # recorded as any other
    return proposed


@pytest.mark.parametrize("fraction", [0.0, 1 / 3, 0.5])
def test_random_fraction_is_the_share_of_random_proposals(fraction: float) -> None:
    proposed = _proposals(fraction, seed=0)
    share = sum(x != 0.5 for x in proposed) / len(proposed)
    assert share == pytest.approx(fraction, abs=0.04)
    assert _proposals(fraction, seed=0) == proposed
    if fraction:
        assert _proposals(fraction, seed=1) != proposed


def test_the_random_path_is_not_tpes_own_start_up_stream() -> None:
    space = Space({"x": uniform(0, 1)})
    searcher = OptunaSearcher(random_fraction=0.5, random_start=0)
    sampler = searcher.make_sampler(space, seed=0, num_trials=40)
    assert isinstance(sampler, RandomInterleavedSampler) and isinstance(sampler.base, RungSampler)
    plain = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    mixed = optuna.create_study(sampler=sampler)
    first = [plain.ask().suggest_float("x", 0, 1) for _ in range(4)]
    random_trials = [n for n in range(20) if sampler.is_random(n)]
    proposals = [mixed.ask().suggest_float("x", 0, 1) for _ in range(20)]
    assert not set(first) & {proposals[n] for n in random_trials}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"rung_view": "pruned", "random_fraction": 0.0},
        {"rung_weighting": True},
        {"aggregate": "last"},
        {"rung_view": "pruned", "rung_weighting": True, "random_fraction": 0.25, "sampler": "gp"},
        {"rung_rule": False, "random_fraction": 0.25},
    ],
)
def test_the_options_reach_the_sampler_and_it_pickles(options: dict[str, Any]) -> None:
    space = Space({"x": uniform(0, 1), "y": uniform(0, 1)})
    searcher = OptunaSearcher(**options)
    sampler = searcher.make_sampler(space, seed=3, num_trials=60)
    if searcher.share_random(1):
        # One metric and a random share: random search first (its own tests:
        # test_random_handover.py), then the share of random trials.
        assert isinstance(sampler, RandomHandoverSampler)
        assert sampler.fraction == searcher.share_random(1)
        assert sampler.start == handover_trials(60, space.dimensions) == 18
        sampler = sampler.base
    if searcher.rung_rule:
        assert isinstance(sampler, RungSampler)
        assert (sampler.view, sampler.weighting, sampler.aggregate) == (
            searcher.rung_view,
            searcher.rung_weighting,
            searcher.aggregate,
        )
    alg = searcher.build(space, metric="loss", mode="min", seed=3, num_trials=60)
    assert set(alg.suggest("t1")) == {"x", "y"}
    assert set(pickle.loads(pickle.dumps(alg)).suggest("t2")) == {"x", "y"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"rung_view": "all"},
            r"OptunaSearcher.rung_view must be one of \['bohb', 'pruned'\], but got 'all'",
        ),
        (
            {"aggregate": "mean"},
            r"OptunaSearcher.aggregate must be one of \['rung', 'last'\], but got 'mean'",
        ),
        (
            {"random_fraction": 1.0},
            r"random_fraction must be a number with 0 <= random_fraction < 1, but got 1.0",
        ),
        ({"random_fraction": -0.1}, r"0 <= random_fraction < 1, but got -0.1"),
        ({"random_fraction": True}, r"0 <= random_fraction < 1, but got True"),
        ({"random_fraction": "0.3"}, r"0 <= random_fraction < 1, but got '0.3'"),
        ({"rung_weighting": 1}, r"OptunaSearcher.rung_weighting must be True or False, but got 1"),
        (
            {"rung_rule": False, "rung_view": "pruned"},
            r"needs rung_rule=True, but got rung_rule=False and rung_view='pruned'",
        ),
        (
            {"rung_rule": False, "rung_weighting": True},
            r"needs rung_rule=True, .* rung_weighting=True",
        ),
        ({"rung_rule": False, "aggregate": "last"}, r"needs rung_rule=True, .* aggregate='last'"),
        (
            {"aggregate": "last", "rung_view": "pruned"},
            r"aggregate='last' models no rung, .* rung_view='pruned'",
        ),
        (
            {"aggregate": "last", "rung_weighting": True},
            r"aggregate='last' models no rung, .* rung_weighting=True",
        ),
    ],
)
def test_bad_levers_name_the_rule_and_the_value(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        OptunaSearcher(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_points": 0}, "min_points must be >= 1"),
        ({"view": "all"}, r"view must be one of \['bohb', 'pruned'\], but got 'all'"),
        ({"aggregate": "mean"}, r"aggregate must be one of"),
        ({"aggregate": "last", "weighting": True}, r"aggregate='last' chooses no rung"),
    ],
)
def test_bad_rung_sampler_settings(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RungSampler(optuna.samplers.RandomSampler(), **{"min_points": 3, **kwargs})


@pytest.mark.parametrize("fraction", [1.0, -0.5, True])
def test_bad_random_fraction(fraction: float) -> None:
    with pytest.raises(ValueError, match=r"`0 <= fraction < 1` must hold"):
        RandomInterleavedSampler(optuna.samplers.RandomSampler(), fraction)


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({}, "optuna (tpe, rung rule, bohb view, random start, 33.3% random)"),
        ({"sampler": "gp"}, "optuna (gp, rung rule, bohb view, random start, 33.3% random)"),
        ({"rung_rule": False}, "optuna (tpe, random start, 33.3% random)"),
        ({"rung_view": "pruned", "random_fraction": 0.0}, "optuna (tpe, rung rule, pruned view)"),
        (
            {"rung_weighting": True},
            "optuna (tpe, rung rule, bohb view, rung weighting, random start, 33.3% random)",
        ),
        ({"random_fraction": 0.0}, "optuna (tpe, rung rule, bohb view)"),
        ({"aggregate": "last"}, "optuna (tpe, last value, random start, 33.3% random)"),
        ({"rung_rule": False, "random_fraction": 0.25}, "optuna (tpe, random start, 25% random)"),
        ({"random_start": 0}, "optuna (tpe, rung rule, bohb view, 33.3% random)"),
        (
            {"random_start": 40, "random_fraction": 0.0},
            "optuna (tpe, rung rule, bohb view, random start of 40)",
        ),
        (
            {
                "sampler": "gp",
                "rung_view": "pruned",
                "rung_weighting": True,
                "random_fraction": 0.5,
            },
            "optuna (gp, rung rule, pruned view, rung weighting, random start, 50% random)",
        ),
    ],
)
def test_str_shows_the_levers_that_are_not_default(kwargs: dict[str, Any], text: str) -> None:
    assert str(OptunaSearcher(**kwargs)) == text


# --- end to end, through the simulator ------------------------------------------------------


class _Told(BaseSampler):
    """Passes every call to ``inner`` and keeps the study that Optuna tells each trial to."""

    def __init__(self, inner: BaseSampler) -> None:
        self.inner = inner
        self.study: optuna.Study | None = None

    def infer_relative_search_space(self, study: Any, trial: Any) -> dict[str, BaseDistribution]:
        return self.inner.infer_relative_search_space(study, trial)

    def sample_relative(self, study: Any, trial: Any, search_space: Any) -> dict[str, Any]:
        return self.inner.sample_relative(study, trial, search_space)

    def sample_independent(self, study: Any, trial: Any, name: str, dist: Any) -> Any:
        return self.inner.sample_independent(study, trial, name, dist)

    def before_trial(self, study: Any, trial: FrozenTrial) -> None:
        self.inner.before_trial(study, trial)

    def after_trial(
        self, study: Any, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        self.study = study
        self.inner.after_trial(study, trial, state, values)


_TOLD: list[_Told] = []


class _Watched(OptunaSearcher):
    """An OptunaSearcher whose sampler is watched by `_Told`."""

    def make_sampler(self, space: Space, *, seed: int | None, num_trials: int) -> Any:
        _TOLD.append(_Told(super().make_sampler(space, seed=seed, num_trials=num_trials)))
        return _TOLD[-1]


def _curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
    """Early iterations favour large x, late ones x = 0.3, y = 0.6."""
    late = (config["x"] - 0.3) ** 2 + (config["y"] - 0.6) ** 2
    return {"loss": late + (1 - config["x"]) / iteration**2}, 1.0


def _train(config: dict[str, Any]) -> None:
    pass


@pytest.mark.parametrize(
    "options",
    [
        {"rung_view": "bohb"},
        {"random_fraction": 1 / 3},
        {"rung_weighting": True},
        {"aggregate": "last"},
    ],
)
def test_each_lever_runs_in_the_simulator_and_learns_every_trial(options: dict[str, Any]) -> None:
    sweep = Sweep(
        name="levers",
        train_func=_train,
        space={"x": uniform(0, 1), "y": uniform(0, 1)},
        metric="loss",
        mode="min",
        searcher=_Watched(**options),
        scheduler="asha",
        num_trials=40,
        max_iterations=9,
        seed=0,
    )
    sim = simulate(sweep, _curve, workers=4)
    study = _TOLD[-1].study
    assert study is not None and len(sim.trials) == len(study.trials) == 40
    told = [t.state for t in study.trials]
    assert told == [C if t.status == "finished" else P for t in sim.trials]
    assert P in told and C in told  # ASHA stopped some, and some finished
    again = simulate(sweep.replace(searcher=_Watched(**options)), _curve, workers=4)
    assert [t.config for t in again.trials] == [t.config for t in sim.trials]  # seeded
