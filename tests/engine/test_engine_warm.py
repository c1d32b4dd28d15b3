"""Warm start: the given configs are suggested first, then the sweep's searcher takes over."""

from __future__ import annotations

from typing import Any

import pytest

from sweeplab import SpecError, Sweep, choice, loguniform, uniform
from sweeplab.engine._strategy import build_search


def train_func(config: dict[str, Any]) -> None:
    pass


SPACE = {"lr": loguniform(1e-4, 1e-1), "opt": choice({"sgd": {"m": uniform(0, 0.9)}, "adam": {}})}
WARM = [{"lr": 0.01, "opt": {"name": "adam"}}, {"lr": 0.001, "opt": {"name": "sgd", "m": 0.5}}]


@pytest.mark.parametrize("searcher", ["random", "optuna", "hyperopt"])
def test_warm_configs_come_first(searcher: str) -> None:
    sweep = Sweep(
        name="warm", train_func=train_func, space=SPACE, metric="loss", mode="min",
        searcher=searcher, warm_start=WARM, seed=0, num_trials=5,
    )  # fmt: skip
    search = build_search(sweep)
    alg = search.search_alg
    alg.set_search_properties("loss", "min", search.param_space)
    suggested = [alg.suggest(f"t{i}") for i in range(4)]
    assert suggested[:2] == WARM
    from sweeplab.space import decode_config

    for index, config in enumerate(suggested[2:], start=2):
        sweep.space.validate_config(decode_config(sweep.space, config))
        alg.on_trial_complete(f"t{index}", result={"loss": 1.0})
    alg.on_trial_complete("t0", result={"loss": 0.5})  # a warm trial: not the inner searcher's


@pytest.mark.parametrize(
    "changes", [{"searcher": "grid"}, {"scheduler": "pbt"}, {"warm_start": [{"lr": 5.0}]}]
)
def test_warm_start_rules(changes: dict[str, Any]) -> None:
    fields: dict[str, Any] = {
        "name": "warm", "train_func": train_func, "metric": "loss", "mode": "min",
        "space": {**SPACE, "b": __import__("sweeplab").grid([1, 2])}, "warm_start": WARM,
    }  # fmt: skip
    fields["warm_start"] = [{**c, "b": 1} for c in WARM]
    fields.update(changes)
    with pytest.raises(SpecError, match="warm_start"):
        Sweep(**fields)
