"""The log-scaled integer, ``randint(low, high, log=True)``, on every backend and in YAML."""

from __future__ import annotations

import math
import pickle
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
from hyperopt.pyll import stochastic
from scipy import stats

from sweeplab.errors import SpecError
from sweeplab.space import (
    IntRange,
    Space,
    compile_to_hyperopt,
    compile_to_optuna,
    decode_config,
    load_space,
    optuna_distribution,
    pbt_explore_fn,
    pbt_mutations,
    qloguniform,
    randint,
)
from sweeplab.strategies import build_tune_search

optuna.logging.set_verbosity(optuna.logging.WARNING)

WIDE = Space({"batch": randint(1, 1024, log=True)})
SMALL = Space({"n": randint(1, 6, log=True)})


def _weights(low: int, high: int) -> np.ndarray:
    """The documented weight of each integer: log((v + 1) / v), normalised."""
    values = np.arange(low, high + 1, dtype=float)
    weights = np.log((values + 1) / values)
    return weights / weights.sum()


def _log2_bins(values: list[int]) -> list[int]:
    counts = Counter(min(int(math.log2(v)), 9) for v in values)
    return [counts[b] for b in range(10)]  # [1, 2), [2, 4), ..., [512, 1024] (1024 folded in)


def _draw(space: Space, backend: str, n: int, seed: int = 0) -> list[dict[str, Any]]:
    if backend == "space":
        return space.sample(seed=seed, n=n)
    if backend == "optuna":
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
        define, out = compile_to_optuna(space), []
        for _ in range(n):
            trial = study.ask()
            out.append(decode_config(space, {**define(trial), **trial.params}))
            study.tell(trial, 0.0)
        return out
    rng = np.random.default_rng(seed)
    compiled = compile_to_hyperopt(space)
    return [decode_config(space, stochastic.sample(compiled, rng=rng)) for _ in range(n)]


def test_randint_log_is_an_int_range_with_a_flag() -> None:
    param = randint(16, 512, log=True)
    assert param == IntRange(16, 512, log=True, q=1)
    assert param == qloguniform(16, 512, 1)  # the same declaration, one class
    assert randint(16, 512) != param
    with pytest.raises(TypeError):
        randint(16, 512, True)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("make", "rule"),
    [
        (lambda: randint(0, 8, log=True), "`low >= 1` must hold for a log integer range"),
        (lambda: randint(-4, 8, log=True), "`low >= 1` must hold for a log integer range"),
        (lambda: randint(9, 8, log=True), "`low <= high` must hold, but got (low=9, high=8)."),
        (lambda: randint(1.5, 8, log=True), "must be integers"),
        (lambda: randint(1, 8, log="yes"), "`log` must be true or false, but got (log='yes')."),
    ],
)
def test_bad_log_randint_raises_one_clear_error(make: Any, rule: str) -> None:
    with pytest.raises(SpecError) as info:
        make()
    assert rule in str(info.value), str(info.value)


@pytest.mark.parametrize("backend", ["space", "optuna", "hyperopt"])
def test_draws_stay_inside_the_inclusive_bounds_and_reach_both(backend: str) -> None:
    values = [c["n"] for c in _draw(SMALL, backend, 400)]
    assert all(type(v) is int for v in values)
    assert set(values) == {1, 2, 3, 4, 5, 6}


@pytest.mark.parametrize("backend", ["space", "hyperopt"])
def test_draws_over_1_to_1024_are_uniform_in_log_space(backend: str) -> None:
    values = [c["batch"] for c in _draw(WIDE, backend, 5000)]
    assert min(values) >= 1 and max(values) <= 1024
    # Each power-of-two bin [2^k, 2^(k+1)) carries the same weight.
    assert stats.chisquare(_log2_bins(values)).pvalue > 0.001
    # A plain randint would put almost every draw in the top bins.
    plain = [c["x"] for c in Space({"x": randint(1, 1024)}).sample(seed=0, n=5000)]
    assert stats.chisquare(_log2_bins(plain)).pvalue < 1e-10


def test_the_random_searcher_draws_as_rays_lograndint_with_the_bound_included() -> None:
    from ray import tune

    n = 6000
    ours = Counter(c["n"] for c in SMALL.sample(seed=1, n=n))
    rays = Counter(tune.lograndint(1, 7).sample(size=n, random_state=np.random.default_rng(1)))
    expected = _weights(1, 6) * n
    for counts in (ours, rays):
        observed = [counts[v] for v in range(1, 7)]
        assert sum(observed) == n  # nothing outside [1, 6]
        assert stats.chisquare(observed, expected).pvalue > 0.001


def test_optuna_gets_a_log_int_distribution() -> None:
    from optuna.distributions import IntDistribution

    assert optuna_distribution(randint(16, 512, log=True)) == IntDistribution(16, 512, log=True)
    trial = optuna.trial.FixedTrial({"batch": 64})
    compile_to_optuna(WIDE)(trial)
    assert trial.params == {"batch": 64}


def test_optuna_draws_are_log_scaled() -> None:
    n = 4000
    values = [c["batch"] for c in _draw(WIDE, "optuna", n)]
    assert min(values) >= 1 and max(values) <= 1024
    # Optuna rounds a log-uniform draw from [0.5, 1024.5]: bin [a, b] weighs log((b+.5)/(a-.5)).
    edges = [(2**k, 2 ** (k + 1) - 1) for k in range(9)] + [(512, 1024)]
    mass = np.array([math.log((b + 0.5) / (a - 0.5)) for a, b in edges])
    expected = mass / mass.sum() * n
    assert stats.chisquare(_log2_bins(values), expected).pvalue > 0.001


def test_hyperopt_compiles_to_a_floored_loguniform() -> None:
    expr = compile_to_hyperopt(WIDE)["batch"]
    text = str(expr)
    assert "int" in text and "loguniform" in text, text
    assert "qloguniform" not in text


@pytest.mark.parametrize("searcher", ["random", "optuna", "hyperopt"])
def test_tune_searchers_suggest_log_ints(searcher: str) -> None:
    space = Space({"batch": randint(16, 512, log=True), "lr": 0.1})
    ts = build_tune_search(space, searcher, metric="loss", mode="min", seed=0, num_trials=20)
    alg = ts.search_alg
    alg.set_search_properties("loss", "min", ts.param_space)
    values = []
    for i in range(20):
        config = decode_config(space, alg.suggest(f"t{i}"))
        space.validate_config(config)
        values.append(config["batch"])
        alg.on_trial_complete(f"t{i}", result={"loss": float(config["batch"])})
    assert all(type(v) is int and 16 <= v <= 512 for v in values)
    assert len(set(values)) > 5


def test_grid_searcher_draws_log_ints_beside_the_grid(tmp_path: Path) -> None:
    from ray.tune.experiment import Experiment

    from sweeplab.space import grid

    space = Space({"g": grid([1, 2]), "batch": randint(16, 512, log=True)})
    ts = build_tune_search(space, "grid", metric="loss", mode="min", seed=0, num_trials=10)
    experiment = Experiment(
        name="grid",
        run=lambda config: None,
        config=pickle.loads(pickle.dumps(ts.param_space)),
        num_samples=ts.num_samples,
        storage_path=str(tmp_path),
    )
    ts.search_alg.add_configurations([experiment])
    values = []
    while (trial := ts.search_alg.next_trial()) is not None:
        values.append(decode_config(space, trial.config)["batch"])
    assert len(values) == 20
    assert all(type(v) is int and 16 <= v <= 512 for v in values)


def test_pbt_mutation_and_explore_keep_log_ints_in_bounds() -> None:
    from ray.tune.schedulers.pbt import _explore

    space = Space({"batch": randint(16, 512, log=True)})
    mutations, explore = pbt_mutations(space), pbt_explore_fn(space)
    assert all(16 <= mutations["batch"]() <= 512 for _ in range(200))
    random.seed(0)
    config, seen = {"batch": 512}, set()
    for _ in range(200):
        config, _ = _explore(config, mutations, 0.25, (0.5, 2.0), explore)
        space.validate_config(config)
        seen.add(config["batch"])
    assert type(config["batch"]) is int
    assert {16, 512} <= seen  # perturbation pushes past both bounds, and is clipped back


def test_decode_snaps_a_backend_float_into_the_range() -> None:
    assert decode_config(WIDE, {"batch": 63.7}) == {"batch": 64}
    assert decode_config(WIDE, {"batch": 1025.0}) == {"batch": 1024}
    with pytest.raises(SpecError, match="batch: value 2000"):
        decode_config(WIDE, {"batch": 2000})


def test_yaml_form_round_trips_and_reads_as_documented(tmp_path: Path) -> None:
    text = "batch: {randint: {low: 16, high: 512, log: true}}\nlayers: {randint: [1, 4]}\n"
    space = Space.from_yaml(text)
    assert space == Space({"batch": randint(16, 512, log=True), "layers": randint(1, 4)})
    assert Space.from_yaml(space.to_yaml()) == space
    assert Space.from_json(space.to_json()) == space
    assert "randint: {low: 16, high: 512, log: true}" in space.to_yaml()
    assert Space.from_yaml("x: {randint: {low: 1, high: 4, log: false}}") == Space(
        {"x": randint(1, 4)}
    )
    path = tmp_path / "space.yaml"
    path.write_text(text)
    assert load_space(path) == space


def test_preview_text_says_log_not_q() -> None:
    space = Space({"batch": randint(16, 512, log=True), "w": qloguniform(16, 512, 1)})
    assert space.describe() == [("batch", "randint [16, 512] log"), ("w", "randint [16, 512] log")]
