"""OptunaSearcher's random start (RandomHandoverSampler): random search's own configs until enough
trials have ended, then the model with BOHB's random share; the rule, its errors and its seed."""

from __future__ import annotations

import pickle
from typing import Any

import optuna
import pytest
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial

from sweeplab import OptunaSearcher, SpecError, Sweep, uniform
from sweeplab.pareto import Objective
from sweeplab.simulation import simulate
from sweeplab.space import Space, choice, loguniform, randint
from sweeplab.space._decode import decode_config
from sweeplab.space._optuna import compile_to_optuna
from sweeplab.space._optuna_searcher import handover_trials
from sweeplab.space._random_handover import RandomHandoverSampler
from sweeplab.space._random_interleave import RandomInterleavedSampler
from sweeplab.space._rung_sampler import RungSampler

optuna.logging.set_verbosity(optuna.logging.WARNING)

LINE = Space({"x": uniform(0, 1)})
NESTED = Space(
    {
        "lr": loguniform(1e-4, 1e-1),
        "layers": randint(1, 5),
        "optimizer": choice({"sgd": {"momentum": uniform(0, 1)}, "adam": {}}),
    }
)
MODEL = 0.5  # what the model proposes for every parameter, so its trials are told apart


class _Model(BaseSampler):
    """A model that proposes `MODEL` for every parameter."""

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return {}

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, name: str, dist: BaseDistribution
    ) -> Any:
        return MODEL


def _handover(
    start: int, *, fraction: float = 1 / 3, seed: int | None = 0
) -> RandomHandoverSampler:
    return RandomHandoverSampler(_Model(), LINE, fraction, start=start, seed=seed)


def _proposals(sampler: BaseSampler, n: int) -> list[float]:
    """``x`` of ``n`` trials asked and ended one after the other."""
    study = optuna.create_study(sampler=sampler)
    proposed = []
    for _ in range(n):
        trial = study.ask()
        proposed.append(trial.suggest_float("x", 0.0, 1.0))
        study.tell(trial, 1.0)
    return proposed


def _proposals_from(study: optuna.Study, n: int) -> list[float]:
    out = []
    for _ in range(n):
        trial = study.ask()
        out.append(trial.suggest_float("x", 0.0, 1.0))
        study.tell(trial, 1.0)
    return out


@pytest.mark.parametrize("start", [0, 1, 10, 48])
def test_random_search_until_start_trials_ended_then_bohbs_share(start: int) -> None:
    proposed = _proposals(_handover(start), 600)
    random_search = [config["x"] for config in LINE.sample(seed=0, n=start)]
    assert proposed[:start] == random_search  # searcher="random"'s configs, in its order
    after = proposed[start:]
    assert sum(x != MODEL for x in after) / len(after) == pytest.approx(1 / 3, abs=0.05)
    # After the handover the same trials are random as under BOHB's interleaving.
    interleaved = _proposals(RandomInterleavedSampler(_Model(), 1 / 3, seed=0), 600)
    assert [x != MODEL for x in after] == [x != MODEL for x in interleaved[start:]]


def test_the_handover_counts_ended_trials_not_asked_ones() -> None:
    sampler = _handover(3, fraction=0.0)
    study = optuna.create_study(sampler=sampler)
    running = [study.ask() for _ in range(6)]  # more at once than the start: none has ended
    assert [sampler.is_random(study, t.number) for t in running] == [True] * 6
    for trial in running[:2]:
        study.tell(trial, 1.0)
    asked = study.ask()
    assert sampler.is_random(study, asked.number)  # 2 ended of 3
    study.tell(running[2], 1.0)
    # A trial's path is decided once: a trial ending while it is asked about changes nothing.
    assert sampler.is_random(study, asked.number)
    assert not sampler.is_random(study, study.ask().number)  # 3 ended: the model's turn


@pytest.mark.parametrize("seed", [0, 7])
def test_it_is_seeded_and_random_search_of_any_space(seed: int) -> None:
    """Before the handover every trial is random search's config of the seed (nested spaces,
    integers and log scales included); a rerun with the seed proposes the same."""

    def configs(sampler: BaseSampler) -> list[dict[str, Any]]:
        study = optuna.create_study(sampler=sampler)
        define = compile_to_optuna(NESTED)
        out = []
        for _ in range(30):
            trial = study.ask()
            define(trial)
            out.append(decode_config(NESTED, trial.params))
            study.tell(trial, 1.0)
        return out

    searcher = OptunaSearcher(random_start=20)
    first = configs(searcher.make_sampler(NESTED, seed=seed, num_trials=100))
    assert first[:20] == NESTED.sample(seed=seed, n=20)
    assert configs(searcher.make_sampler(NESTED, seed=seed, num_trials=100)) == first
    assert configs(searcher.make_sampler(NESTED, seed=seed + 1, num_trials=100))[:20] != first[:20]


def test_it_pickles_mid_sweep_and_goes_on_the_same() -> None:
    sampler = _handover(8)
    study = optuna.create_study(sampler=sampler)
    for _ in range(5):
        trial = study.ask()
        trial.suggest_float("x", 0.0, 1.0)
        study.tell(trial, 1.0)
    copy = pickle.loads(pickle.dumps(sampler))
    rest = []
    for each in (sampler, copy):
        again = optuna.create_study(sampler=each)
        for t in study.trials:
            again.add_trial(t)
        rest.append(_proposals_from(again, 20))
    assert rest[0] == rest[1]


@pytest.mark.parametrize(
    ("num_trials", "dimensions", "expected"),
    [
        (600, 7, 48),  # the simulated benchmark's LCBench tasks: six per parameter, and six
        (150, 7, 48),
        (60, 7, 20),  # at most a third of the sweep
        (40, 2, 13),
        (3, 1, 1),
        (2, 5, 0),  # too small a sweep to start with random search
    ],
)
def test_handover_trials(num_trials: int, dimensions: int, expected: int) -> None:
    assert handover_trials(num_trials, dimensions) == expected


@pytest.mark.parametrize(
    ("options", "objectives", "wrapper", "start"),
    [
        ({}, 1, RandomHandoverSampler, handover_trials(60, 2)),
        ({"random_start": 5}, 1, RandomHandoverSampler, 5),
        ({"random_start": 0}, 1, RandomInterleavedSampler, None),  # BOHB's share from the start
        ({"random_fraction": 0.0}, 1, RungSampler, None),  # no random trials asked for
        # Several metrics: as before, no random share and no random start by default.
        ({}, 2, optuna.samplers.TPESampler, None),
        ({"random_start": 5}, 2, RandomHandoverSampler, 5),
    ],
)
def test_the_default_starts_random_with_one_metric_only(
    options: dict[str, Any], objectives: int, wrapper: type, start: int | None
) -> None:
    space = Space({"x": uniform(0, 1), "y": uniform(0, 1)})
    named = [Objective("loss", "min"), Objective("cost", "min")][:objectives]
    sampler = OptunaSearcher(**options).make_sampler(
        space, seed=0, num_trials=60, objectives=named if objectives > 1 else ()
    )
    assert type(sampler) is wrapper
    if start is not None:
        assert sampler.start == start


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, r"OptunaSearcher.random_start must be an integer >= 0 or None, but got -1\."),
        (True, r"must be an integer >= 0 or None, but got True\."),
        (2.5, r"must be an integer >= 0 or None, but got 2.5\."),
        ("8", r"must be an integer >= 0 or None, but got '8'\."),
    ],
)
def test_bad_random_start_names_the_rule_and_the_value(value: Any, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        OptunaSearcher(random_start=value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fraction": 1.0}, r"`0 <= fraction < 1` must hold, but got fraction=1.0"),
        ({"start": -1}, r"`start` must be an integer >= 0, but got start=-1"),
        ({"start": True}, r"`start` must be an integer >= 0, but got start=True"),
    ],
)
def test_bad_handover_settings(kwargs: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"fraction": 1 / 3, "start": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        RandomHandoverSampler(_Model(), LINE, settings.pop("fraction"), **settings)


def _train(config: dict[str, Any]) -> None:
    pass


def _curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
    return {"loss": (config["x"] - 0.3) ** 2 + (config["y"] - 0.6) ** 2 + 1 / iteration}, 1.0


def test_a_simulated_sweep_starts_as_random_search() -> None:
    """Through the engine: the default searcher's first trials are random search's, config for
    config, until the handover."""

    def sweep(searcher: Any) -> Sweep:
        return Sweep(
            name="start",
            train_func=_train,
            space={"x": uniform(0, 1), "y": uniform(0, 1)},
            metric="loss",
            mode="min",
            searcher=searcher,
            scheduler="asha",
            num_trials=40,
            max_iterations=9,
            seed=0,
        )

    random_search = simulate(sweep("random"), _curve, workers=4).trials
    optuna_search = simulate(sweep(OptunaSearcher()), _curve, workers=4).trials
    first = handover_trials(40, 2)
    assert [t.config for t in optuna_search[:first]] == [t.config for t in random_search[:first]]
    assert [t.config for t in optuna_search] != [t.config for t in random_search]
