"""OptunaSearcher and BOHB's rung rule (RungSampler) on Optuna's real studies and samplers."""

from __future__ import annotations

import pickle
import warnings

import optuna
import pytest
from optuna.trial import TrialState

from sweeplab import OptunaSearcher, SpecError, Sweep, uniform
from sweeplab.space import Space
from sweeplab.space._optuna_searcher import startup_trials
from sweeplab.space._rung_sampler import RungSampler

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(sampler: optuna.samplers.BaseSampler) -> optuna.Study:
    return optuna.create_study(direction="minimize", sampler=sampler)


def _trial(study: optuna.Study, x: float, steps: dict[int, float], *, complete: bool) -> None:
    """One trial at ``x`` that reported ``steps``; COMPLETE with its last value, or PRUNED."""
    study.enqueue_trial({"x": x})
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0.0, 1.0)})
    assert trial.params["x"] == x
    for step, value in steps.items():
        trial.report(value, step)
    if complete:
        study.tell(trial, list(steps.values())[-1])
    else:
        study.tell(trial, state=TrialState.PRUNED)


def _view(sampler: RungSampler, study: optuna.Study) -> optuna.Study:
    running = study.ask()
    view, shadow = sampler._view(study, study.trials[running.number])
    assert shadow.number == running.number
    return view


def test_the_rung_is_the_highest_step_with_enough_observations() -> None:
    sampler = RungSampler(optuna.samplers.RandomSampler(seed=0), min_points=3)
    study = _study(sampler)
    assert sampler.rung(study.trials) is None
    for i in range(4):
        _trial(study, i / 10, {1: 1.0 + i}, complete=False)
    _trial(study, 0.5, {1: 0.5, 3: 0.4}, complete=False)
    _trial(study, 0.6, {1: 0.6, 3: 0.3, 9: 0.2}, complete=True)
    assert sampler.rung(study.trials) == 1  # step 3 has 2 observations, step 1 has 6
    _trial(study, 0.7, {1: 0.7, 3: 0.35}, complete=False)
    assert sampler.rung(study.trials) == 3


def test_the_view_compares_trials_at_the_rung() -> None:
    sampler = RungSampler(optuna.samplers.RandomSampler(seed=0), min_points=2, view="pruned")
    study = _study(sampler)
    _trial(study, 0.1, {1: 5.0}, complete=False)  # stopped below the rung
    _trial(study, 0.2, {1: 1.0, 3: 0.9}, complete=False)
    _trial(study, 0.3, {1: 2.0, 3: 0.4, 9: 0.1}, complete=True)
    view = _view(sampler, study)
    states = [t.state for t in view.trials]
    pruned, complete, running = TrialState.PRUNED, TrialState.COMPLETE, TrialState.RUNNING
    assert states == [pruned, complete, complete, running]
    # Complete at the rung with the value there, and only the steps up to it.
    assert [t.value for t in view.trials[1:3]] == [0.9, 0.4]
    assert view.trials[2].intermediate_values == {1: 2.0, 3: 0.4}
    assert [t.params["x"] for t in view.trials[:3]] == [0.1, 0.2, 0.3]
    # The study itself is untouched.
    assert [t.state for t in study.trials[:3]] == [
        TrialState.PRUNED,
        TrialState.PRUNED,
        TrialState.COMPLETE,
    ]


def test_before_a_rung_has_enough_points_the_base_sees_the_study() -> None:
    sampler = RungSampler(optuna.samplers.RandomSampler(seed=0), min_points=5)
    study = _study(sampler)
    _trial(study, 0.2, {1: 1.0}, complete=False)
    assert _view(sampler, study) is study


@pytest.mark.parametrize("base", ["tpe", "gp"])
def test_tpe_and_gp_model_the_rung(base: str) -> None:
    """Trials good at the rung are near x = 0.2; the model proposes near there."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inner = (
            optuna.samplers.TPESampler(seed=1, n_startup_trials=4, constant_liar=True)
            if base == "tpe"
            else optuna.samplers.GPSampler(seed=1, n_startup_trials=4)
        )
    sampler = RungSampler(inner, min_points=4)
    study = _study(sampler)
    for i in range(16):
        x = (i + 0.5) / 16
        _trial(study, x, {1: (x - 0.2) ** 2, 3: (x - 0.2) ** 2 / 2}, complete=False)
    # The finished trials are far from the optimum: without the rung rule TPE would rank
    # them first (COMPLETE before every PRUNED), with it they are judged at step 3.
    for x in (0.85, 0.9, 0.95):
        _trial(study, x, {1: 0.5, 3: 0.45, 9: 0.4}, complete=True)
    assert sampler.rung(study.trials) == 3
    proposed = []
    for _ in range(8):
        trial = study.ask()
        proposed.append(trial.suggest_float("x", 0.0, 1.0))
        study.tell(trial, state=TrialState.FAIL)
    assert sorted(proposed)[len(proposed) // 2] < 0.5, proposed


def test_startup_trials_scale_with_the_sweep() -> None:
    assert [startup_trials(n) for n in (6, 40, 60, 180, 1000)] == [4, 4, 6, 10, 10]


def test_the_searcher_compiles_against_the_space_and_pickles() -> None:
    space = Space({"x": uniform(0, 1), "y": uniform(0, 1)})
    sampler = OptunaSearcher(random_fraction=0.0).make_sampler(space, seed=3, num_trials=60)
    assert isinstance(sampler, RungSampler)
    assert sampler.min_points == 6  # 6 start-up trials, more than 2 parameters + 1
    assert isinstance(sampler.base, optuna.samplers.TPESampler)
    plain = OptunaSearcher(rung_rule=False, random_fraction=0.0).make_sampler(
        space, seed=3, num_trials=60
    )
    assert isinstance(plain, optuna.samplers.TPESampler)
    good = OptunaSearcher(good_fraction=0.25, random_fraction=0.0).make_sampler(
        space, seed=3, num_trials=60
    )
    assert pickle.loads(pickle.dumps(good)).base._gamma(40) == 10  # a quarter of 40
    gp = OptunaSearcher(sampler="gp", random_fraction=0.0).make_sampler(
        space, seed=3, num_trials=60
    )
    assert isinstance(gp, RungSampler) and isinstance(gp.base, optuna.samplers.GPSampler)
    searcher = OptunaSearcher().build(space, metric="loss", mode="min", seed=3, num_trials=60)
    assert set(searcher.suggest("t1")) == {"x", "y"}
    restored = pickle.loads(pickle.dumps(searcher))
    assert set(restored.suggest("t2")) == {"x", "y"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sampler": "cmaes"}, "OptunaSearcher.sampler must be one of"),
        ({"startup_trials": 0}, "OptunaSearcher.startup_trials must be >= 1"),
        ({"min_points": 2.5}, "OptunaSearcher.min_points must be an integer"),
        ({"good_fraction": 1.5}, "OptunaSearcher.good_fraction must be a number between 0 and 1"),
    ],
)
def test_bad_settings_name_the_field(kwargs: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        OptunaSearcher(**kwargs)


def test_a_sweep_takes_an_optuna_searcher() -> None:
    def train_func(config: dict) -> None:
        pass

    sweep = Sweep(
        name="s",
        train_func=train_func,
        space={"x": uniform(0, 1)},
        metric="loss",
        mode="min",
        searcher=OptunaSearcher(sampler="gp"),
        scheduler="asha",
    )
    assert sweep.searcher_name == "optuna (gp, rung rule, bohb view, random start, 33.3% random)"
    with pytest.raises(SpecError, match="searcher"):
        Sweep(
            name="s",
            train_func=train_func,
            space={"x": uniform(0, 1)},
            metric="loss",
            mode="min",
            searcher=OptunaSearcher(),
            scheduler="pbt",
        )
